export { runCli } from './cli';
export { serviceNames, type ServiceName } from './commands';
