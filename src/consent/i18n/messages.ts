/**
 * Every string the creator's pages show, as one typed catalogue per language. A language file is
 * typed `Messages`, so a missing or extra key does not compile; `catalogue.test.ts` checks the same
 * at run time. Values are plain text (the pages escape them); parameters are named, so a
 * translation may put them where its grammar wants them.
 */

type Lender = { lender: string };
type OnPlatform = { platform: string };
/** A number of months, for the language to choose its plural form. */
type Months = { months: number };

export interface Messages {
  // Every page
  languageName: string;
  languageNav: string;
  privacyLink: string;
  footerOperatedFor: (p: Lender) => string;
  footerOperated: string;
  /** A lender name the request supplied, with the lender account's registered name when they differ. */
  lenderWithAccount: (p: Lender & { account: string }) => string;
  backToConsent: string;
  closePage: string;
  /** The link back to the lender's app, on a page the consent link ends on, when the creation gave a `return_url`. */
  returnToLender: (p: Lender) => string;

  // The consent page
  consentTitle: (p: Lender) => string;
  consentIntro: (p: Lender) => string;
  connectedNotice: (p: OnPlatform) => string;
  whatIsRead: string;
  readsYoutube: string;
  readsStripe: string;
  scopeYoutube: string;
  scopeStripe: string;
  statusLabel: string;
  statusConnected: string;
  statusNotConnected: string;
  connectButton: (p: OnPlatform) => string;
  /** The status of a platform this deployment cannot connect (no provider credentials). */
  statusUnavailable: string;
  /** In place of the connect button of such a platform. */
  platformNotOfferedText: (p: OnPlatform & Lender) => string;
  /** The consent page when the service can connect none of the platforms asked for (P32). */
  noPlatformAvailable: (p: Lender) => string;
  neverTitle: string;
  neverPasswords: string;
  neverContent: string;
  neverChanges: string;
  neverEmail: (p: Lender) => string;
  finishTitle: string;
  finishText: (p: Lender) => string;
  finishButton: string;
  finishHint: string;
  expiresOn: (p: { date: string }) => string;
  declineTitle: string;
  declineText: (p: Lender) => string;
  declineLink: string;

  // Declining
  declineConfirmTitle: (p: Lender) => string;
  declineConfirmText: (p: Lender) => string;
  declineConfirmFinal: (p: Lender) => string;
  declineConfirmButton: string;
  declineConfirmBack: string;

  // Ongoing monitoring (P33), on the pages of a verification that has it, and only there
  monitoringTitle: string;
  /** Before the first summary the window's end is not yet known, only its length. */
  monitoringPlanned: (p: Lender & Months) => string;
  monitoringUntil: (p: Lender & { date: string }) => string;
  monitoringStopAnyTime: (p: Lender) => string;
  /** Beside the consent button: consenting is consenting to the monthly updates too. */
  monitoringConsentCovers: string;
  /** The processing page: the first summary is on its way, the monthly updates follow it. */
  monitoringAfterProcessing: (p: Lender & Months) => string;

  // Stopping ongoing monitoring, after completion
  sharingTitle: string;
  sharingActive: (p: Lender & { date: string }) => string;
  stopButton: string;
  stopConfirmTitle: (p: Lender) => string;
  stopConfirmText: (p: Lender) => string;
  stopConfirmKept: (p: Lender) => string;
  stopConfirmButton: string;
  stopConfirmBack: string;
  /** A stop form without its browser's token (another browser's, an expired one, a forged post): nothing stopped. */
  stopRefusedText: string;
  stoppedTitle: (p: Lender) => string;
  sharingEndedTitle: (p: Lender) => string;
  endedWindowOver: (p: { date: string }) => string;
  endedByYou: (p: Lender) => string;
  endedByLender: (p: Lender) => string;
  endedAccessWithdrawn: string;
  endedOther: string;
  endedKept: (p: Lender) => string;

  // The sandbox's stand-in for a provider's consent screen
  sandboxTitle: (p: OnPlatform) => string;
  sandboxHeading: (p: OnPlatform) => string;
  sandboxText: (p: OnPlatform) => string;
  sandboxAsks: (p: Lender) => string;
  sandboxAllow: string;
  sandboxDeny: string;

  // Back from a provider without access
  deniedTitle: (p: OnPlatform) => string;
  deniedText: (p: OnPlatform) => string;
  providerErrorTitle: (p: OnPlatform) => string;
  providerErrorText: (p: OnPlatform) => string;
  deniedNextTitle: string;
  deniedTryAgainText: (p: OnPlatform) => string;
  tryAgainButton: (p: OnPlatform) => string;
  deniedDeclineText: (p: Lender) => string;

  // Outcomes
  completedTitle: (p: Lender) => string;
  completedText: (p: Lender & { date: string }) => string;
  processingTitle: string;
  processingText: (p: Lender) => string;
  failedTitle: string;
  failedPlatformError: string;
  failedConsentRevoked: string;
  failedTimeout: string;
  failedOther: string;
  failedNext: (p: Lender) => string;
  declinedTitle: string;
  declinedText: (p: Lender) => string;
  declinedChangeMind: (p: Lender) => string;
  expiredTitle: string;
  expiredText: (p: Lender) => string;
  cancelledTitle: string;
  cancelledText: (p: Lender) => string;
  closedTitle: string;
  closedText: string;
  outcomeWhen: (p: { date: string }) => string;

  // Refusals and errors
  unknownLinkTitle: string;
  unknownLinkText: string;
  unknownPlatformTitle: string;
  unknownPlatformText: string;
  alreadyConnectedTitle: string;
  alreadyConnectedText: (p: OnPlatform) => string;
  refusedTitle: string;
  nothingConnectedText: string;
  providerRefusedText: (p: OnPlatform) => string;
  platformUnavailableText: string;
  signInExpiredText: string;
  otherBrowserText: (p: OnPlatform) => string;
  crossSiteTitle: string;
  crossSiteText: string;
  notFoundTitle: string;
  notFoundText: string;
  unavailableTitle: string;
  unavailableText: string;
  errorTitle: string;
  errorText: string;

  // The privacy notice
  privacyTitle: string;
  privacyIntro: string;
  privacyWhoTitle: string;
  privacyController: (p: Lender) => string;
  privacyControllerUnnamed: string;
  privacyProcessor: string;
  privacyPurposesTitle: string;
  purposeVerify: (p: Lender) => string;
  purposeNotify: (p: Lender) => string;
  purposeVerifyUnnamed: string;
  purposeNotifyUnnamed: string;
  purposeMonitor: string;
  purposeRights: string;
  privacyDataTitle: string;
  dataIncome: string;
  dataAccount: string;
  dataTokens: string;
  dataSummary: string;
  dataLanguage: string;
  privacyRetentionTitle: string;
  retentionLink: string;
  retentionData: string;
  retentionTokens: string;
  retentionNothingRead: string;
  retentionLanguage: string;
  privacyRightsTitle: string;
  rightsList: string;
  rightsWithdraw: string;
  rightsHow: (p: Lender) => string;
  rightsHowUnnamed: string;
  rightsComplain: string;
}
