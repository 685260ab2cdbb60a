/**
 * Errors raised by the client itself. Server errors are never wrapped: node-redis rejects with
 * its ErrorReply whose message is the server's exact text (for example
 * "ERR invalid burst: must be a positive integer"), so applications can match on it.
 */
export class HotKVError extends Error {
  constructor(message: string) {
    super(message.startsWith('hotkv:') ? message : `hotkv: ${message}`);
    this.name = 'HotKVError';
  }
}
