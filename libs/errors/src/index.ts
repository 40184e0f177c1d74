// The catalog of error codes every Spool service, the SDK and the CLI share. It depends on
// nothing, so the base libraries (protocol, common) use it too.
export {
  errorCatalog,
  errorCodeOfKafkaCode,
  errorDefinitionOf,
  isErrorCode,
  isInvalidMetadata,
  isRetriable,
  type ErrorCode,
  type ErrorDefinition,
} from './error-catalog';
export { CatalogError } from './catalog-error';
