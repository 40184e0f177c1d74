// The wire formats every Spool process and the client SDK share: the gRPC messages generated
// from proto/ (never edited by hand) and, beside them, hand-written codecs.
export * from './generated/spool/v1/common';
export * from './generated/spool/v1/storage';
export * from './generated/spool/v1/controller';
export * from './generated/spool/v1/coordinator';
export * from './generated/spool/v1/gateway';
