// Names in the generated TypeScript: files in kebab-case, properties in camelCase as Kafka's own
// generator and JSON converter spell them (the schema's name with its first letter lower-cased).

export function propertyName(schemaName: string): string {
  return schemaName.charAt(0).toLowerCase() + schemaName.slice(1);
}

/** ProduceRequest -> produce-request, KRaftVersionRecord -> k-raft-version-record. */
export function fileNameOf(messageName: string): string {
  return messageName
    .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
    .replace(/([A-Z])([A-Z][a-z])/g, '$1-$2')
    .toLowerCase();
}

/** ProduceRequest -> Produce: the API's name as ApiKey lists it. */
export function apiNameOf(requestName: string): string {
  return requestName.replace(/Request$/, '');
}
