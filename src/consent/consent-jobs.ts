/** The consent feature's durable jobs, with the payload each kind's enqueuer writes. */
export type ConsentJobPayloads = {
  /** A provider refused to revoke a grant at erasure time: try again (the grant is in `provider_revocations`). */
  'consent.revoke_grant': { revocationId: string };
  /** A verification's monitoring ended (P33): revoke the grants still held for it and forget their tokens. */
  'consent.end_grants': Record<string, never>;
};
