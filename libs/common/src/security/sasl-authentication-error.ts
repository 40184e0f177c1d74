import { SpoolError } from '../errors';

/**
 * An authentication that failed (Kafka's SASL_AUTHENTICATION_FAILED): a malformed SASL message,
 * a feature not supported, a wrong password or proof. The message never tells a wrong password
 * from an unknown user.
 */
export class SaslAuthenticationError extends SpoolError {
  constructor(message: string) {
    super('SASL_AUTHENTICATION_FAILED', message);
    this.name = 'SaslAuthenticationError';
  }
}
