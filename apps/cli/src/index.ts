export { runCli, listCommands, type CommandListing } from './cli';
export { serviceNames, type ServiceName } from './commands';
