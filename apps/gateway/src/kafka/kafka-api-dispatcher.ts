/**
 * Serves the Kafka requests of every connection: finds the API, checks its version, decodes the
 * header and body with the codecs generated from Kafka's schemas (@spool/kafka-protocol), calls
 * the API's handler, and encodes its answer with the response header of that version.
 *
 * 1. An API key the listener does not serve, or a version outside what it serves, is Kafka's
 *    UNSUPPORTED_VERSION: ApiVersions is answered at version 0 with error 35 and the served
 *    ranges (KIP-511), any other API closes the connection (KafkaRequestRefused), as a Kafka
 *    broker closes a connection whose request it cannot parse.
 * 2. A header or body that does not decode (KafkaProtocolError: truncated, a length past the end,
 *    a null where none is allowed) closes the connection, naming the field and the byte offset.
 *    Points 1 and 2 happen synchronously, before any later request of the connection starts.
 * 3. The handler's answer is encoded at the request's version; each request counts in the
 *    common request metrics as `Kafka<Name>` with its errors by code.
 * 4. With an authorizer, the request passes the API's gate first (kafka-authorization.ts): the
 *    handler serves only what the caller may do, and the refused part is answered beside it.
 * 5. On a SASL listener, a connection not yet authenticated may send only ApiVersions,
 *    SaslHandshake and SaslAuthenticate; any other request closes it (kafka-sasl.ts).
 */
import { isCodedError, type RequestMetrics } from '@spool/common';
import { errorCodeOfKafkaCode } from '@spool/errors';
import {
  KafkaProtocolError,
  KafkaReader,
  KafkaWriter,
  apiMessageOf,
  readRequestHeader,
  requestHeaderVersion,
  responseHeaderVersion,
  writeResponseHeader,
} from '@spool/kafka-protocol';
import type {
  KafkaRequestContext,
  KafkaRequestHandler,
  KafkaResponseFrame,
} from './kafka-connection';
import type { KafkaAuthorization } from './kafka-authorization';
import { KafkaErrorNumber } from './kafka-errors';
import { KafkaRequestRefused, type KafkaRequestFrame } from './kafka-request-frame';
import { allowedBeforeAuthentication } from './kafka-sasl';

/** ApiVersions' key: the one API answered even at a version the listener does not serve. */
export const apiVersionsApiKey = 18;

export interface KafkaApiContext extends KafkaRequestContext {
  /** The client.id of the request header; null when the client sent none. */
  readonly clientId: string | null;
}

/** What one served API brings: its versions, codecs and handler. */
export interface KafkaApi<Request = never, Response = never> {
  readonly apiKey: number;
  /** The versions this listener implements (intersected with the schema's at registration). */
  readonly minVersion: number;
  readonly maxVersion: number;
  readonly read: (reader: KafkaReader, version: number) => Request;
  readonly write: (writer: KafkaWriter, message: Response, version: number) => void;
  /** The answer; undefined sends no response (Produce with acks=0). */
  readonly serve: (
    request: Request,
    version: number,
    context: KafkaApiContext,
  ) => Promise<Response | undefined>;
}

/** A served API's versions as ApiVersions lists them. */
export interface ServedApiVersions {
  readonly apiKey: number;
  readonly minVersion: number;
  readonly maxVersion: number;
}

/** One registered API, its types erased: the dispatcher only passes values between its parts. */
type AnyKafkaApi = KafkaApi<unknown, unknown>;

export class KafkaApiDispatcher implements KafkaRequestHandler {
  private readonly apis = new Map<number, AnyKafkaApi & { readonly name: string }>();

  constructor(
    private readonly requestMetrics: RequestMetrics,
    private readonly authorization?: KafkaAuthorization,
  ) {}

  /** Adds an API, served at the versions both it and the schema know. */
  register<Request, Response>(api: KafkaApi<Request, Response>): void {
    const message = apiMessageOf(api.apiKey);
    if (message === undefined) throw new Error(`API key ${api.apiKey} has no generated codec`);
    // Kafka does not advertise a newest version still under development; neither does Spool.
    const schemaMaxVersion = message.validVersions.max - (message.latestVersionUnstable ? 1 : 0);
    const minVersion = Math.max(api.minVersion, message.validVersions.min);
    const maxVersion = Math.min(api.maxVersion, schemaMaxVersion);
    if (minVersion > maxVersion) {
      throw new Error(
        `${message.name}: versions ${api.minVersion}-${api.maxVersion} not in schema`,
      );
    }
    this.apis.set(api.apiKey, {
      ...(api as unknown as AnyKafkaApi),
      minVersion,
      maxVersion,
      name: message.name,
    });
  }

  /** Every served API and its versions, by API key (ApiVersions' answer). */
  servedVersions(): ServedApiVersions[] {
    return [...this.apis.values()]
      .map(({ apiKey, minVersion, maxVersion }) => ({ apiKey, minVersion, maxVersion }))
      .sort((left, right) => left.apiKey - right.apiKey);
  }

  serve(frame: KafkaRequestFrame, context: KafkaRequestContext): Promise<KafkaResponseFrame> {
    const api = this.apis.get(frame.apiKey);
    // Point 1.
    if (
      api === undefined ||
      frame.apiVersion < api.minVersion ||
      frame.apiVersion > api.maxVersion
    ) {
      if (frame.apiKey === apiVersionsApiKey) {
        return Promise.resolve(this.unsupportedApiVersions(frame.correlationId));
      }
      const name = apiMessageOf(frame.apiKey)?.name;
      throw new KafkaRequestRefused(
        api === undefined
          ? `API key ${frame.apiKey}${name === undefined ? '' : ` (${name})`} is not served`
          : `${api.name} version ${frame.apiVersion} is not served; versions ` +
              `${api.minVersion} to ${api.maxVersion} are`,
      );
    }
    // Point 5.
    if (!context.session.authenticated && !allowedBeforeAuthentication(frame.apiKey)) {
      throw new KafkaRequestRefused(
        `${api.name} is not allowed before SASL authentication (only ApiVersions, ` +
          'SaslHandshake and SaslAuthenticate are)',
      );
    }
    // Point 2.
    const message = apiMessageOf(frame.apiKey)!;
    const reader = new KafkaReader(frame.bytes);
    let clientId: string | null;
    let request: unknown;
    try {
      clientId = readRequestHeader(
        reader,
        requestHeaderVersion(message, frame.apiVersion),
      ).clientId;
      request = api.read(reader, frame.apiVersion);
    } catch (error) {
      if (!(error instanceof KafkaProtocolError)) throw error;
      throw new KafkaRequestRefused(
        `${api.name} v${frame.apiVersion} is malformed: ${error.message}`,
        {
          cause: error,
        },
      );
    }
    return this.answer(api, frame, request, { ...context, clientId });
  }

  /** Point 3. */
  private async answer(
    api: AnyKafkaApi & { readonly name: string },
    frame: KafkaRequestFrame,
    request: unknown,
    context: KafkaApiContext,
  ): Promise<KafkaResponseFrame> {
    const done = this.requestMetrics.begin(`Kafka${api.name}`, { timed: true });
    let response: unknown;
    try {
      // Point 4.
      const gated = this.authorization?.gate(api.apiKey, request, frame.apiVersion, context) ?? {
        request,
        complete: (answer: unknown) => answer,
      };
      response =
        'refused' in gated
          ? gated.refused
          : gated.complete(await api.serve(gated.request, frame.apiVersion, context));
    } catch (error) {
      done({ error });
      if (isCodedError(error) && !(error instanceof KafkaRequestRefused)) {
        // An operating error the API has no field for (a negative fetch size, a controller
        // that cannot be reached): Kafka answers such a request by closing the connection.
        throw new KafkaRequestRefused(`${api.name} failed: ${error.code}: ${error.message}`, {
          cause: error,
        });
      }
      throw error;
    }
    done({ response: {} });
    if (response !== undefined) this.countErrors(`Kafka${api.name}`, response);
    if (response === undefined) return undefined;
    const writer = new KafkaWriter();
    writeResponseHeader(
      writer,
      { correlationId: frame.correlationId },
      responseHeaderVersion(apiMessageOf(frame.apiKey)!, frame.apiVersion),
    );
    api.write(writer, response, frame.apiVersion);
    return writer.toBuffers();
  }

  /**
   * Counts every non-zero errorCode of a response, at any depth (a partition's, a topic's, the
   * response's own), under its catalog name, as the gRPC responses' errors are counted.
   */
  private countErrors(api: string, value: unknown): void {
    if (typeof value !== 'object' || value === null || Buffer.isBuffer(value)) return;
    if (Array.isArray(value)) {
      for (const entry of value) this.countErrors(api, entry);
      return;
    }
    for (const [field, entry] of Object.entries(value)) {
      if (field === 'errorCode' && typeof entry === 'number' && entry !== 0) {
        this.requestMetrics.errors.inc({ api, code: errorCodeOfKafkaCode(entry) ?? String(entry) });
      } else if (typeof entry === 'object') this.countErrors(api, entry);
    }
  }

  /**
   * ApiVersionsResponse v0 (header v0): error UNSUPPORTED_VERSION and the served ranges, which
   * every client can read whatever version it asked for (KIP-511).
   */
  private unsupportedApiVersions(correlationId: number): Buffer {
    const served = this.servedVersions();
    const writer = new KafkaWriter();
    writer.writeInt32(correlationId);
    writer.writeInt16(KafkaErrorNumber.UnsupportedVersion);
    writer.writeInt32(served.length);
    for (const { apiKey, minVersion, maxVersion } of served) {
      writer.writeInt16(apiKey);
      writer.writeInt16(minVersion);
      writer.writeInt16(maxVersion);
    }
    return writer.toBuffer();
  }
}
