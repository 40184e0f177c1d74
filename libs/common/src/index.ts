// The runtime every Spool service shares: configuration, logging, metrics, health, gRPC helpers,
// typed errors, assertions and graceful shutdown.
export { assert, assertNever, AssertionError } from './assert';
export {
  assertionFailureExitCode,
  exitOnAssertionFailure,
  isAssertionFailure,
} from './assertion-failure';
export {
  SpoolError,
  CommonErrorCode,
  isCodedError,
  wireErrorOf,
  grpcStatusForCode,
  retriableGrpcStatuses,
  type CodedError,
} from './errors';
export {
  loadConfig,
  readConfigFile,
  ConfigError,
  describeSettings,
  flagName,
  environmentName,
  fileKey,
  type ConfigValues,
  type SettingsSchema,
  type Setting,
  type IntegerSetting,
  type StringSetting,
  type BooleanSetting,
  type ListSetting,
} from './config';
export { createLogger, logLevels, type Logger, type LogLevel } from './logger';
export { createMetricsRegistry } from './metrics';
export {
  registerTextGaugeFamily,
  renderMetrics,
  setTextDefaultLabels,
  type TextGaugeFamily,
} from './text-metric-family';
export {
  RequestMetrics,
  requestDurationBucketsSeconds,
  errorCodeOf,
  apiNameOfPath,
  type RequestOutcome,
} from './request-metrics';
export { Readiness } from './readiness';
export { startOperationsServer, type OperationsServer } from './http-server';
export {
  GrpcServer,
  grpcMaxMessageBytesDefault,
  type GrpcServerKeepalive,
  type UnaryHandler,
  type ServerStreamHandler,
  type BidiStreamHandler,
} from './grpc-server';
export { StreamPipeline, type Correlated, type StreamPipelineOptions } from './stream-pipeline';
export {
  PipelinedStreamServer,
  type PipelinedStreamServerOptions,
} from './pipelined-stream-server';
export {
  toGrpcStatus,
  fromGrpcError,
  errorCodeMetadataKey,
  retriableMetadataKey,
} from './grpc-errors';
export {
  createGrpcClient,
  callOnce,
  callWithRetry,
  backoffMs,
  sleep,
  grpcChannelOptions,
  callDeadlineMsDefault,
  type CallOptions,
  type UnaryMethod,
} from './grpc-client';
export { runShutdownSteps, installSignalHandlers, type ShutdownStep } from './shutdown';
export {
  startService,
  commonSettings,
  type CommonSettings,
  type ServiceContext,
  type ServiceDefinition,
  type RunningService,
} from './start-service';
export { ProcessLock, type LockedErrorFactory } from './process-lock';
export { LeaderChannel, type LeaderChannelOptions } from './leader-channel';
export { StreamFollower, type StreamFollowerOptions, type FollowedStream } from './stream-follower';
export {
  TlsMaterial,
  TlsMaterialError,
  checkTlsMaterial,
  sslReloadIntervalMsDefault,
  type TlsFiles,
  type TlsMaterialSnapshot,
} from './tls/tls-material';
export { TransportSecurity } from './tls/transport-security';
export {
  clientAuthentications,
  serverCredentialsOf,
  channelCredentialsOf,
  type ClientAuthentication,
} from './tls/grpc-tls';
export {
  serviceRoles,
  serviceRoleUri,
  serviceRoleOf,
  checkServiceServerIdentity,
  ensurePeerIsService,
  type ServiceRole,
} from './tls/service-identity';
export {
  createCertificateAuthority,
  issueCertificate,
  type CertificateAuthority,
  type CertificateRequest,
  type IssuedCertificate,
  type DistinguishedName,
} from './tls/certificate-authority';
export {
  developmentCertificateFiles,
  writeDevelopmentCertificates,
  type DevelopmentCertificates,
} from './tls/certificate-files';
export {
  securitySettings,
  transportSecurityOf,
  type SecuritySettings,
} from './tls/security-settings';
export {
  anonymousPrincipal,
  userPrincipal,
  userPrincipalType,
  principalOf,
  clientHostOf,
  hostOfPeer,
  bindPrincipal,
} from './security/principal';
export { SaslAuthenticationError } from './security/sasl-authentication-error';
export {
  scramMechanisms,
  scramIterationsMin,
  scramIterationsMax,
  scramIterationsDefault,
  isScramMechanism,
  saltedPasswordOf,
  scramCredentialOf,
  scramCredentialFromPassword,
  newScramSalt,
  passwordMatches,
  invalidCredentialsMessage,
  ScramServerExchange,
  type ScramMechanism,
  type ScramCredential,
  type ScramCredentialLookup,
} from './security/scram';
export { authenticatePlain, parsePlainMessage, type PlainMessage } from './security/sasl-plain';
