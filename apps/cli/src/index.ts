export { runCli, listCommands, type CommandListing } from './cli';
export { serviceNames, type ServiceName } from './commands';
export { reconcileClusterCertificates, type SecretStore } from './tls-command';
export type { TlsSecretData, WantedServiceCertificate } from './cluster-certificates';
