import type { Messages } from './messages.ts';

/** Each catalogue writes its own plural: the pages hand over the number, and languages count differently. */
const monthsText = (months: number) => (months === 1 ? '1 month' : `${months} months`);

export const en: Messages = {
  languageName: 'English',
  languageNav: 'Language',
  privacyLink: 'Privacy notice',
  footerOperatedFor: ({ lender }) => `This page is run by the Creator Income Verification Service on behalf of ${lender}.`,
  footerOperated: 'This page is run by the Creator Income Verification Service on behalf of the lender who sent you the link.',
  lenderWithAccount: ({ lender, account }) => `${lender} (account: ${account})`,
  backToConsent: 'Back to the consent page',
  closePage: 'You can close this page.',
  returnToLender: ({ lender }) => `Return to ${lender}`,

  consentTitle: ({ lender }) => `${lender} asks to verify your creator income`,
  consentIntro: ({ lender }) =>
    `${lender} never sees your passwords or logs in to your accounts. You connect each platform below with read-only access; the service reads your income, computes a summary for ${lender} and shares only that summary.`,
  connectedNotice: ({ platform }) => `${platform} is connected.`,
  whatIsRead: 'What is read',
  readsYoutube: 'Estimated revenue per month from YouTube Analytics, and the email address of the Google account.',
  readsStripe: 'Balance transactions (payments and refunds) to total your gross volume per month, and the account email.',
  scopeYoutube: 'Google read-only scopes: yt-analytics-monetary.readonly, email',
  scopeStripe: 'Stripe Connect read_only access',
  statusLabel: 'Status:',
  statusConnected: 'Connected',
  statusNotConnected: 'Not connected',
  connectButton: ({ platform }) => `Connect ${platform}`,
  statusUnavailable: 'Not available',
  noPlatformAvailable: ({ lender }) =>
    `This service cannot connect any of the platforms ${lender} asked for at the moment, so your income cannot be verified through this link now. Please let ${lender} know; they can send you a new link.`,
  platformNotOfferedText: ({ platform, lender }) =>
    `${platform} cannot be connected through this service at the moment, so there is no button for it. You can continue with the other platforms, or ask ${lender} how to proceed.`,
  neverTitle: 'What is never seen or shared',
  neverPasswords: "Your passwords: you sign in on the platform's own page, never here.",
  neverContent: 'Your videos, customers, messages and audience data.',
  neverChanges: 'Any ability to change your accounts: access is read-only and you can revoke it on the platform at any time.',
  neverEmail: ({ lender }) => `Your email address is kept only to answer data-protection requests; it is not given to ${lender}.`,
  finishTitle: 'Give consent',
  finishText: ({ lender }) =>
    `When you give consent, the income of the connected platforms is read and a summary is sent to ${lender}. A platform you leave unconnected is reported as having no data.`,
  finishButton: 'Give consent and finish',
  finishHint: 'Connect at least one platform to continue.',
  expiresOn: ({ date }) => `This link expires on ${date}.`,
  declineTitle: 'Do not want to share?',
  declineText: ({ lender }) => `You can say no. Nothing is read, and ${lender} is told that you do not want to share.`,
  declineLink: 'I do not want to share',

  declineConfirmTitle: ({ lender }) => `Decline to share your income with ${lender}?`,
  declineConfirmText: ({ lender }) =>
    `If you decline, nothing is read from your accounts, not even from a platform you already connected, and ${lender} is told that you chose not to share.`,
  declineConfirmFinal: ({ lender }) => `This link then stops working. If you change your mind later, ask ${lender} for a new link.`,
  declineConfirmButton: 'Yes, I do not want to share',
  declineConfirmBack: 'No, go back to the consent page',

  monitoringTitle: 'Ongoing access',
  monitoringPlanned: ({ lender, months }) =>
    `${lender} also asks for ongoing access: your income is read again once a month, for ${monthsText(months)} after your first summary, and each updated summary goes to ${lender}.`,
  monitoringUntil: ({ lender, date }) =>
    `${lender} also asks for ongoing access: your income is read again once a month until ${date}, and each updated summary goes to ${lender}.`,
  monitoringStopAnyTime: ({ lender }) =>
    `You can stop this at any time from this same link. ${lender} then receives no more updates; the summaries already sent stay with ${lender}.`,
  monitoringConsentCovers: 'Your consent also covers the monthly updates described above.',
  monitoringAfterProcessing: ({ lender, months }) =>
    `After this first summary, your income is read again once a month for ${monthsText(months)}, and each updated summary goes to ${lender}. Once the first summary is sent, you can stop this at any time from this same link.`,

  sharingTitle: 'What is still shared',
  sharingActive: ({ lender, date }) =>
    `Once a month until ${date}, your income is read again from the platforms you connected, and ${lender} receives an updated summary.`,
  stopButton: 'Stop sharing',
  stopConfirmTitle: ({ lender }) => `Stop sharing your income with ${lender}?`,
  stopConfirmText: ({ lender }) =>
    `If you stop, ${lender} will no longer receive updates: your income is not read again, and the read-only access to your platforms is given up.`,
  stopConfirmKept: ({ lender }) => `The summaries already sent stay with ${lender}. This cannot be undone; to share again later, ask ${lender} for a new link.`,
  stopConfirmButton: 'Yes, stop sharing',
  stopConfirmBack: 'No, keep sharing',
  stopRefusedText:
    'For your safety, sharing was not stopped: this form was not opened in this browser, or it is too old. Open your link again and press "Stop sharing" once more.',
  stoppedTitle: ({ lender }) => `You stopped sharing your income with ${lender}`,
  sharingEndedTitle: ({ lender }) => `Your income is no longer shared with ${lender}`,
  endedWindowOver: ({ date }) => `The period you agreed to ended on ${date}.`,
  endedByYou: ({ lender }) => `Sharing has stopped: ${lender} receives no more updates of your income.`,
  endedByLender: ({ lender }) => `${lender} stopped the monthly updates.`,
  endedAccessWithdrawn: 'Read access to a platform you connected was withdrawn, so your income can no longer be read.',
  endedOther: 'The monthly updates have ended.',
  endedKept: ({ lender }) => `The summaries sent until then stay with ${lender}. Nothing more is read from your accounts.`,

  sandboxTitle: ({ platform }) => `${platform} (sandbox): allow read-only access?`,
  sandboxHeading: ({ platform }) => `${platform} sign-in (sandbox simulation)`,
  sandboxText: ({ platform }) => `This sandbox stands in for ${platform}'s own consent screen: no real account is connected and the income is synthetic.`,
  sandboxAsks: ({ lender }) => `The verification for ${lender} asks for:`,
  sandboxAllow: 'Allow read-only access',
  sandboxDeny: 'Deny',

  deniedTitle: ({ platform }) => `You did not give access to ${platform}`,
  deniedText: ({ platform }) => `You chose not to allow read-only access on ${platform}'s page. Nothing was read from ${platform}, and it is not connected.`,
  providerErrorTitle: ({ platform }) => `${platform} could not be connected`,
  providerErrorText: ({ platform }) => `${platform} did not finish the sign-in, so it is not connected and nothing was read. This is usually temporary.`,
  deniedNextTitle: 'What would you like to do?',
  deniedTryAgainText: ({ platform }) => `If you pressed Deny by mistake, or want to try once more, you can go back to ${platform}.`,
  tryAgainButton: ({ platform }) => `Try ${platform} again`,
  deniedDeclineText: ({ lender }) => `If you do not want to share your income with ${lender} at all, you can decline.`,

  completedTitle: ({ lender }) => `Your income summary was shared with ${lender}`,
  completedText: ({ lender, date }) => `The summary of your income was sent to ${lender} on ${date}. Nothing more is needed from you.`,
  processingTitle: 'Thank you: your income is being read',
  processingText: ({ lender }) =>
    `You gave consent. Your income is being read now, and the summary goes to ${lender}, usually within a few minutes. Nothing more is needed from you.`,
  failedTitle: 'Your income could not be verified',
  failedPlatformError: 'A connected platform returned an error while your income was being read.',
  failedConsentRevoked: 'Access to a connected platform was withdrawn before your income could be read.',
  failedTimeout: 'Reading your income took too long, so it was stopped.',
  failedOther: 'Your income could not be read.',
  failedNext: ({ lender }) => `${lender} has been told. If you still want to share your income, ask ${lender} for a new link.`,
  declinedTitle: 'You declined to share your income',
  declinedText: ({ lender }) => `${lender} has been told that you do not want to share. Nothing was read from your accounts.`,
  declinedChangeMind: ({ lender }) => `If you change your mind, ask ${lender} for a new link.`,
  expiredTitle: 'This link has expired',
  expiredText: ({ lender }) =>
    `The consent session ended before consent was given, so nothing was read. If you still want to share your income, ask ${lender} for a new link.`,
  cancelledTitle: 'The lender withdrew this request',
  cancelledText: ({ lender }) => `${lender} no longer needs this verification and withdrew it. Nothing more is needed from you, and nothing more will be read.`,
  closedTitle: 'Nothing more is needed from you',
  closedText: 'This verification no longer needs anything from you.',
  outcomeWhen: ({ date }) => `Last change: ${date}.`,

  unknownLinkTitle: 'This link does not work',
  unknownLinkText: 'The consent link is not valid. Check that you opened the whole link your lender sent you, or ask them for a new one.',
  unknownPlatformTitle: 'Unknown platform',
  unknownPlatformText: 'Your lender did not ask for this platform.',
  alreadyConnectedTitle: 'Already connected',
  alreadyConnectedText: ({ platform }) => `${platform} is already connected for this verification.`,
  refusedTitle: 'That did not work',
  nothingConnectedText: 'Connect at least one platform before giving consent.',
  providerRefusedText: ({ platform }) => `${platform} did not grant read access. Try connecting again.`,
  platformUnavailableText: 'Connecting this platform is not available at the moment. Please try again later.',
  signInExpiredText: 'This sign-in has expired or was already used. Open the link your lender sent you and start again.',
  otherBrowserText: ({ platform }) =>
    `For your safety, nothing was connected: this ${platform} sign-in was started in a different browser. If you are connecting your own account, open the link your lender sent you in this browser and start again there.`,
  crossSiteTitle: 'This request was refused',
  crossSiteText: 'For your safety, these buttons only work on the consent page itself. Open the link your lender sent you and try again there.',
  notFoundTitle: 'Page not found',
  notFoundText: 'There is no such page.',
  unavailableTitle: 'Please try again in a moment',
  unavailableText: 'This page is briefly unavailable. Reload it in a minute; your progress is kept.',
  errorTitle: 'Something went wrong',
  errorText: 'Please try again in a minute. If it keeps happening, contact your lender.',

  privacyTitle: 'Privacy notice',
  privacyIntro: 'How your data is handled when you verify your creator income through this page.',
  privacyWhoTitle: 'Who is responsible',
  privacyController: ({ lender }) =>
    `${lender} is the controller: it asked for this verification, decides what it is used for, and receives the income summary.`,
  privacyControllerUnnamed:
    'The lender who sent you the link is the controller: it asked for this verification, decides what it is used for, and receives the income summary.',
  privacyProcessor:
    "The Creator Income Verification Service is the processor: it reads your income and computes the summary on the lender's behalf, under a data-processing agreement, and uses your data for nothing else.",
  privacyPurposesTitle: 'What your data is used for',
  purposeVerify: ({ lender }) => `To verify your platform income for a credit decision by ${lender}, with your consent.`,
  purposeNotify: ({ lender }) => `To tell ${lender} when the verification is finished, has failed, or has expired.`,
  purposeVerifyUnnamed: "To verify your platform income for the lender's credit decision, with your consent.",
  purposeNotifyUnnamed: 'To tell the lender when the verification is finished, has failed, or has expired.',
  purposeMonitor:
    'Only if the lender asked for ongoing monitoring and you agreed on the consent page: to read your income again once a month for the months shown there, and send the lender each new summary. You can stop it at any time from the consent link.',
  purposeRights: 'To answer your data-protection requests (access, copy, erasure).',
  privacyDataTitle: 'What is read and kept',
  dataIncome: 'Your income per month from each platform you connect, for the last 24 months.',
  dataAccount: "The connected account's identifier and email address. The email is stored encrypted and is not given to the lender.",
  dataTokens: 'The read-only access the platform grants, stored encrypted and never shown to anyone.',
  dataSummary: 'The income summary sent to the lender: averages, trend, stability and an eligibility assessment. Not your individual payments.',
  dataLanguage:
    'If you choose a language on these pages, a cookie remembers it. Two short-lived cookies protect what you do here: one ties a platform connection to the browser that started it, one ties a “Stop sharing” confirmation to yours. Nothing tracks you.',
  privacyRetentionTitle: 'How long it is kept',
  retentionLink: 'The consent link works for 7 days; after that it expires.',
  retentionData: 'Your income, the summary and the account details are kept until you or the lender ask for them to be erased.',
  retentionTokens:
    'Access to your platforms is kept until erasure (with ongoing monitoring, until it ends) and is then also revoked at the platform. You can revoke it yourself on the platform at any time.',
  retentionNothingRead:
    "If you decline or the link expires, your income is never read. Anything already kept (the lender's request, a platform you connected) stays only until it is erased, like the rest.",
  retentionLanguage: 'The language cookie is kept for one year.',
  privacyRightsTitle: 'Your rights',
  rightsList: 'You can ask to see the data held about you, to receive a copy in a portable format, to have it corrected, and to have it erased.',
  rightsWithdraw:
    'You can withdraw your consent at any time, by revoking access on the platform or by asking for erasure. This does not affect what was done before.',
  rightsHow: ({ lender }) =>
    `To exercise these rights, contact ${lender}. As the controller, it handles your request, and this service carries it out for them.`,
  rightsHowUnnamed:
    'To exercise these rights, contact the lender who sent you the link. As the controller, it handles your request, and this service carries it out for them.',
  rightsComplain: 'You can also complain to the data-protection authority where you live or work.',
};
