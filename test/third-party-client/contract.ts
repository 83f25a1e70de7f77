// What test/third-party-client.test.ts hands to lender-app.ts and gets back: no import, so that both
// the repository's program and the lender's project compile it.

export interface Inputs {
  baseUrl: string;
  lenderKey: string;
  gdprKey: string;
  /** An HTTPS receiver that acknowledges every delivery. */
  webhookUrl: string;
}

/** One answer the server gave, as the generated client saw it. */
export interface Call {
  method: string;
  /** The path template of the operation, as in the OpenAPI document. */
  path: string;
  status: number;
}

export interface Outcome {
  calls: Call[];
  tapeSchemaVersion: string;
  tapeSignature: string | null;
  signingKeyIds: string[];
  testEventAcknowledged: boolean;
  replayOf: string | null | undefined;
  erasedVerifications: number;
}
