import type { Messages } from './messages.ts';

/** „einen Monat lang“ reads as German, „1 Monat lang“ as a form. */
const monthsText = (months: number) => (months === 1 ? 'einen Monat' : `${months} Monate`);

export const de: Messages = {
  languageName: 'Deutsch',
  languageNav: 'Sprache',
  privacyLink: 'Datenschutzhinweise',
  footerOperatedFor: ({ lender }) => `Diese Seite betreibt der Creator Income Verification Service im Auftrag von ${lender}.`,
  footerOperated: 'Diese Seite betreibt der Creator Income Verification Service im Auftrag des Kreditgebers, der Ihnen den Link geschickt hat.',
  lenderWithAccount: ({ lender, account }) => `${lender} (Konto: ${account})`,
  backToConsent: 'Zurück zur Einwilligungsseite',
  closePage: 'Sie können diese Seite schließen.',
  returnToLender: ({ lender }) => `Zurück zu ${lender}`,

  consentTitle: ({ lender }) => `${lender} möchte Ihre Einnahmen als Creator prüfen`,
  consentIntro: ({ lender }) =>
    `${lender} sieht nie Ihre Passwörter und meldet sich nie in Ihren Konten an. Sie verbinden jede Plattform unten mit reinem Lesezugriff; der Dienst liest Ihre Einnahmen, erstellt daraus eine Zusammenfassung für ${lender} und gibt nur diese Zusammenfassung weiter.`,
  connectedNotice: ({ platform }) => `${platform} ist verbunden.`,
  whatIsRead: 'Was gelesen wird',
  readsYoutube: 'Die geschätzten monatlichen Einnahmen aus YouTube Analytics und die E-Mail-Adresse des Google-Kontos.',
  readsStripe: 'Die Kontobewegungen (Zahlungen und Erstattungen), um Ihren monatlichen Bruttoumsatz zu berechnen, und die E-Mail-Adresse des Kontos.',
  scopeYoutube: 'Google-Berechtigungen nur zum Lesen: yt-analytics-monetary.readonly, email',
  scopeStripe: 'Stripe Connect, Zugriff read_only (nur lesen)',
  statusLabel: 'Status:',
  statusConnected: 'Verbunden',
  statusNotConnected: 'Nicht verbunden',
  connectButton: ({ platform }) => `${platform} verbinden`,
  statusUnavailable: 'Nicht verfügbar',
  noPlatformAvailable: ({ lender }) =>
    `Dieser Dienst kann derzeit keine der Plattformen verbinden, die ${lender} angefragt hat. Ihr Einkommen kann über diesen Link daher jetzt nicht bestätigt werden. Bitte geben Sie ${lender} Bescheid; ${lender} kann Ihnen einen neuen Link senden.`,
  platformNotOfferedText: ({ platform, lender }) =>
    `${platform} kann über diesen Dienst derzeit nicht verbunden werden, daher gibt es dafür keine Schaltfläche. Sie können mit den anderen Plattformen fortfahren oder ${lender} fragen, wie es weitergeht.`,
  neverTitle: 'Was nie eingesehen oder weitergegeben wird',
  neverPasswords: 'Ihre Passwörter: Sie melden sich auf der Seite der Plattform selbst an, nie hier.',
  neverContent: 'Ihre Videos, Kundinnen und Kunden, Nachrichten und Zielgruppendaten.',
  neverChanges: 'Jede Möglichkeit, Ihre Konten zu ändern: Der Zugriff ist nur lesend, und Sie können ihn jederzeit auf der Plattform widerrufen.',
  neverEmail: ({ lender }) => `Ihre E-Mail-Adresse wird nur gespeichert, um Datenschutzanfragen zu beantworten; ${lender} erhält sie nicht.`,
  finishTitle: 'Einwilligung geben',
  finishText: ({ lender }) =>
    `Wenn Sie einwilligen, werden die Einnahmen der verbundenen Plattformen gelesen und eine Zusammenfassung an ${lender} gesendet. Eine Plattform, die Sie nicht verbinden, wird als „keine Daten“ gemeldet.`,
  finishButton: 'Einwilligen und abschließen',
  finishHint: 'Verbinden Sie mindestens eine Plattform, um fortzufahren.',
  expiresOn: ({ date }) => `Dieser Link läuft am ${date} ab.`,
  declineTitle: 'Sie möchten nichts teilen?',
  declineText: ({ lender }) => `Sie können ablehnen. Dann wird nichts gelesen, und ${lender} erfährt, dass Sie nichts teilen möchten.`,
  declineLink: 'Ich möchte nichts teilen',

  declineConfirmTitle: ({ lender }) => `Die Weitergabe Ihrer Einnahmen an ${lender} ablehnen?`,
  declineConfirmText: ({ lender }) =>
    `Wenn Sie ablehnen, wird nichts aus Ihren Konten gelesen, auch nicht von einer bereits verbundenen Plattform, und ${lender} erfährt, dass Sie sich gegen die Weitergabe entschieden haben.`,
  declineConfirmFinal: ({ lender }) =>
    `Dieser Link funktioniert danach nicht mehr. Wenn Sie es sich später anders überlegen, bitten Sie ${lender} um einen neuen Link.`,
  declineConfirmButton: 'Ja, ich möchte nichts teilen',
  declineConfirmBack: 'Nein, zurück zur Einwilligungsseite',

  monitoringTitle: 'Fortlaufender Zugriff',
  monitoringPlanned: ({ lender, months }) =>
    `${lender} bittet außerdem um fortlaufenden Zugriff: Ihre Einnahmen werden nach Ihrer ersten Zusammenfassung ${monthsText(months)} lang einmal im Monat erneut gelesen, und jede aktualisierte Zusammenfassung geht an ${lender}.`,
  monitoringUntil: ({ lender, date }) =>
    `${lender} bittet außerdem um fortlaufenden Zugriff: Ihre Einnahmen werden bis zum ${date} einmal im Monat erneut gelesen, und jede aktualisierte Zusammenfassung geht an ${lender}.`,
  monitoringStopAnyTime: ({ lender }) =>
    `Sie können das jederzeit über diesen Link beenden. ${lender} erhält dann keine Aktualisierungen mehr; die bereits gesendeten Zusammenfassungen bleiben bei ${lender}.`,
  monitoringConsentCovers: 'Ihre Einwilligung umfasst auch die oben beschriebenen monatlichen Aktualisierungen.',
  monitoringAfterProcessing: ({ lender, months }) =>
    `Nach dieser ersten Zusammenfassung werden Ihre Einnahmen ${monthsText(months)} lang einmal im Monat erneut gelesen, und jede aktualisierte Zusammenfassung geht an ${lender}. Sobald die erste Zusammenfassung gesendet ist, können Sie das jederzeit über diesen Link beenden.`,

  sharingTitle: 'Was weiterhin geteilt wird',
  sharingActive: ({ lender, date }) =>
    `Bis zum ${date} werden Ihre Einnahmen einmal im Monat erneut von den verbundenen Plattformen gelesen, und ${lender} erhält jeweils eine aktualisierte Zusammenfassung.`,
  stopButton: 'Teilen beenden',
  stopConfirmTitle: ({ lender }) => `Das Teilen Ihrer Einnahmen mit ${lender} beenden?`,
  stopConfirmText: ({ lender }) =>
    `Wenn Sie das Teilen beenden, erhält ${lender} keine Aktualisierungen mehr: Ihre Einnahmen werden nicht mehr gelesen, und der Lesezugriff auf Ihre Plattformen wird aufgegeben.`,
  stopConfirmKept: ({ lender }) =>
    `Die bereits gesendeten Zusammenfassungen bleiben bei ${lender}. Das lässt sich nicht rückgängig machen; wenn Sie später wieder teilen möchten, bitten Sie ${lender} um einen neuen Link.`,
  stopConfirmButton: 'Ja, Teilen beenden',
  stopConfirmBack: 'Nein, weiter teilen',
  stopRefusedText:
    'Zu Ihrer Sicherheit wurde das Teilen nicht beendet: Dieses Formular wurde nicht in diesem Browser geöffnet oder ist zu alt. Öffnen Sie Ihren Link erneut und wählen Sie noch einmal „Teilen beenden“.',
  stoppedTitle: ({ lender }) => `Sie haben das Teilen Ihrer Einnahmen mit ${lender} beendet`,
  sharingEndedTitle: ({ lender }) => `Ihre Einnahmen werden nicht mehr mit ${lender} geteilt`,
  endedWindowOver: ({ date }) => `Der Zeitraum, dem Sie zugestimmt haben, endete am ${date}.`,
  endedByYou: ({ lender }) => `Das Teilen ist beendet: ${lender} erhält keine Aktualisierungen Ihrer Einnahmen mehr.`,
  endedByLender: ({ lender }) => `${lender} hat die monatlichen Aktualisierungen beendet.`,
  endedAccessWithdrawn: 'Der Lesezugriff auf eine verbundene Plattform wurde widerrufen, daher können Ihre Einnahmen nicht mehr gelesen werden.',
  endedOther: 'Die monatlichen Aktualisierungen sind beendet.',
  endedKept: ({ lender }) => `Die bis dahin gesendeten Zusammenfassungen bleiben bei ${lender}. Aus Ihren Konten wird nichts mehr gelesen.`,

  sandboxTitle: ({ platform }) => `${platform} (Sandbox): Lesezugriff erlauben?`,
  sandboxHeading: ({ platform }) => `Anmeldung bei ${platform} (Sandbox-Simulation)`,
  sandboxText: ({ platform }) =>
    `Diese Sandbox ersetzt die Einwilligungsseite von ${platform}: Es wird kein echtes Konto verbunden, und die Einnahmen sind synthetisch.`,
  sandboxAsks: ({ lender }) => `Die Prüfung für ${lender} fragt nach:`,
  sandboxAllow: 'Lesezugriff erlauben',
  sandboxDeny: 'Ablehnen',

  deniedTitle: ({ platform }) => `Sie haben ${platform} keinen Zugriff gegeben`,
  deniedText: ({ platform }) =>
    `Sie haben auf der Seite von ${platform} den Lesezugriff nicht erlaubt. Von ${platform} wurde nichts gelesen, und die Plattform ist nicht verbunden.`,
  providerErrorTitle: ({ platform }) => `${platform} konnte nicht verbunden werden`,
  providerErrorText: ({ platform }) =>
    `${platform} hat die Anmeldung nicht abgeschlossen. Die Plattform ist daher nicht verbunden, und es wurde nichts gelesen. Das ist meist nur vorübergehend.`,
  deniedNextTitle: 'Wie möchten Sie weitermachen?',
  deniedTryAgainText: ({ platform }) => `Wenn Sie versehentlich abgelehnt haben oder es noch einmal versuchen möchten, können Sie zu ${platform} zurückkehren.`,
  tryAgainButton: ({ platform }) => `${platform} erneut versuchen`,
  deniedDeclineText: ({ lender }) => `Wenn Sie Ihre Einnahmen überhaupt nicht mit ${lender} teilen möchten, können Sie ablehnen.`,

  completedTitle: ({ lender }) => `Die Zusammenfassung Ihrer Einnahmen wurde an ${lender} übermittelt`,
  completedText: ({ lender, date }) => `Die Zusammenfassung Ihrer Einnahmen wurde am ${date} an ${lender} gesendet. Von Ihnen wird nichts weiter benötigt.`,
  processingTitle: 'Vielen Dank: Ihre Einnahmen werden gelesen',
  processingText: ({ lender }) =>
    `Sie haben eingewilligt. Ihre Einnahmen werden jetzt gelesen, und die Zusammenfassung geht meist innerhalb weniger Minuten an ${lender}. Von Ihnen wird nichts weiter benötigt.`,
  failedTitle: 'Ihre Einnahmen konnten nicht geprüft werden',
  failedPlatformError: 'Eine verbundene Plattform hat beim Lesen Ihrer Einnahmen einen Fehler gemeldet.',
  failedConsentRevoked: 'Der Zugriff auf eine verbundene Plattform wurde widerrufen, bevor Ihre Einnahmen gelesen werden konnten.',
  failedTimeout: 'Das Lesen Ihrer Einnahmen hat zu lange gedauert und wurde deshalb abgebrochen.',
  failedOther: 'Ihre Einnahmen konnten nicht gelesen werden.',
  failedNext: ({ lender }) => `${lender} wurde informiert. Wenn Sie Ihre Einnahmen weiterhin teilen möchten, bitten Sie ${lender} um einen neuen Link.`,
  declinedTitle: 'Sie haben die Weitergabe Ihrer Einnahmen abgelehnt',
  declinedText: ({ lender }) => `${lender} wurde mitgeteilt, dass Sie nichts teilen möchten. Aus Ihren Konten wurde nichts gelesen.`,
  declinedChangeMind: ({ lender }) => `Wenn Sie es sich anders überlegen, bitten Sie ${lender} um einen neuen Link.`,
  expiredTitle: 'Dieser Link ist abgelaufen',
  expiredText: ({ lender }) =>
    `Die Frist für die Einwilligung ist abgelaufen, ohne dass eingewilligt wurde; es wurde nichts gelesen. Wenn Sie Ihre Einnahmen weiterhin teilen möchten, bitten Sie ${lender} um einen neuen Link.`,
  cancelledTitle: 'Der Kreditgeber hat diese Anfrage zurückgezogen',
  cancelledText: ({ lender }) =>
    `${lender} benötigt diese Prüfung nicht mehr und hat sie zurückgezogen. Von Ihnen wird nichts weiter benötigt, und es wird nichts mehr gelesen.`,
  closedTitle: 'Von Ihnen wird nichts weiter benötigt',
  closedText: 'Für diese Prüfung ist von Ihnen nichts mehr nötig.',
  outcomeWhen: ({ date }) => `Letzte Änderung: ${date}.`,

  unknownLinkTitle: 'Dieser Link funktioniert nicht',
  unknownLinkText:
    'Der Einwilligungslink ist ungültig. Prüfen Sie, ob Sie den vollständigen Link geöffnet haben, den Ihr Kreditgeber Ihnen geschickt hat, oder bitten Sie um einen neuen.',
  unknownPlatformTitle: 'Unbekannte Plattform',
  unknownPlatformText: 'Ihr Kreditgeber hat nicht nach dieser Plattform gefragt.',
  alreadyConnectedTitle: 'Bereits verbunden',
  alreadyConnectedText: ({ platform }) => `${platform} ist für diese Prüfung bereits verbunden.`,
  refusedTitle: 'Das hat nicht geklappt',
  nothingConnectedText: 'Verbinden Sie mindestens eine Plattform, bevor Sie einwilligen.',
  providerRefusedText: ({ platform }) => `${platform} hat keinen Lesezugriff gewährt. Versuchen Sie es erneut.`,
  platformUnavailableText: 'Diese Plattform kann im Moment nicht verbunden werden. Bitte versuchen Sie es später noch einmal.',
  signInExpiredText: 'Diese Anmeldung ist abgelaufen oder wurde bereits verwendet. Öffnen Sie den Link Ihres Kreditgebers und beginnen Sie von vorn.',
  otherBrowserText: ({ platform }) =>
    `Zu Ihrer Sicherheit wurde nichts verbunden: Diese Anmeldung bei ${platform} wurde in einem anderen Browser begonnen. Wenn Sie Ihr eigenes Konto verbinden, öffnen Sie den Link Ihres Kreditgebers in diesem Browser und beginnen Sie dort von vorn.`,
  crossSiteTitle: 'Diese Anfrage wurde abgelehnt',
  crossSiteText:
    'Zu Ihrer Sicherheit funktionieren diese Schaltflächen nur auf der Einwilligungsseite selbst. Öffnen Sie den Link Ihres Kreditgebers und versuchen Sie es dort erneut.',
  notFoundTitle: 'Seite nicht gefunden',
  notFoundText: 'Diese Seite gibt es nicht.',
  unavailableTitle: 'Bitte versuchen Sie es gleich noch einmal',
  unavailableText: 'Diese Seite ist kurz nicht erreichbar. Laden Sie sie in einer Minute neu; Ihr Fortschritt bleibt erhalten.',
  errorTitle: 'Etwas ist schiefgelaufen',
  errorText: 'Bitte versuchen Sie es in einer Minute erneut. Wenn das Problem bleibt, wenden Sie sich an Ihren Kreditgeber.',

  privacyTitle: 'Datenschutzhinweise',
  privacyIntro: 'Wie mit Ihren Daten umgegangen wird, wenn Sie Ihre Einnahmen als Creator über diese Seite prüfen lassen.',
  privacyWhoTitle: 'Wer verantwortlich ist',
  privacyController: ({ lender }) =>
    `${lender} ist der Verantwortliche: ${lender} hat diese Prüfung angefordert, entscheidet über ihren Zweck und erhält die Zusammenfassung Ihrer Einnahmen.`,
  privacyControllerUnnamed:
    'Der Kreditgeber, der Ihnen den Link geschickt hat, ist der Verantwortliche: Er hat diese Prüfung angefordert, entscheidet über ihren Zweck und erhält die Zusammenfassung Ihrer Einnahmen.',
  privacyProcessor:
    'Der Creator Income Verification Service ist Auftragsverarbeiter: Er liest Ihre Einnahmen und erstellt die Zusammenfassung im Auftrag des Kreditgebers auf Grundlage eines Auftragsverarbeitungsvertrags und nutzt Ihre Daten für nichts anderes.',
  privacyPurposesTitle: 'Wofür Ihre Daten verwendet werden',
  purposeVerify: ({ lender }) => `Um mit Ihrer Einwilligung Ihre Plattformeinnahmen für eine Kreditentscheidung von ${lender} zu prüfen.`,
  purposeNotify: ({ lender }) => `Um ${lender} mitzuteilen, dass die Prüfung abgeschlossen, fehlgeschlagen oder abgelaufen ist.`,
  purposeVerifyUnnamed: 'Um mit Ihrer Einwilligung Ihre Plattformeinnahmen für die Kreditentscheidung des Kreditgebers zu prüfen.',
  purposeNotifyUnnamed: 'Um dem Kreditgeber mitzuteilen, dass die Prüfung abgeschlossen, fehlgeschlagen oder abgelaufen ist.',
  purposeMonitor:
    'Nur wenn der Kreditgeber eine laufende Überwachung angefragt und Sie auf der Zustimmungsseite eingewilligt haben: Ihr Einkommen für die dort genannten Monate einmal im Monat erneut abzurufen und dem Kreditgeber jede neue Zusammenfassung zu senden. Sie können dies jederzeit über den Zustimmungslink beenden.',
  purposeRights: 'Um Ihre Datenschutzanfragen zu beantworten (Auskunft, Kopie, Löschung).',
  privacyDataTitle: 'Was gelesen und gespeichert wird',
  dataIncome: 'Ihre monatlichen Einnahmen von jeder verbundenen Plattform für die letzten 24 Monate.',
  dataAccount:
    'Die Kennung und die E-Mail-Adresse des verbundenen Kontos. Die E-Mail-Adresse wird verschlüsselt gespeichert und nicht an den Kreditgeber weitergegeben.',
  dataTokens: 'Der Lesezugriff, den die Plattform gewährt, verschlüsselt gespeichert und niemandem angezeigt.',
  dataSummary:
    'Die Zusammenfassung, die der Kreditgeber erhält: Durchschnittswerte, Entwicklung, Stabilität und eine Einschätzung der Kreditwürdigkeit. Keine einzelnen Zahlungen.',
  dataLanguage:
    'Wenn Sie auf diesen Seiten eine Sprache wählen, merkt sich ein Cookie diese Wahl. Zwei kurzlebige Cookies schützen, was Sie hier tun: Eines bindet eine Plattformverbindung an den Browser, der sie begonnen hat, eines bindet eine Bestätigung von „Teilen beenden“ an Ihren Browser. Nichts verfolgt Sie.',
  privacyRetentionTitle: 'Wie lange gespeichert wird',
  retentionLink: 'Der Einwilligungslink gilt 7 Tage und läuft danach ab.',
  retentionData: 'Ihre Einnahmen, die Zusammenfassung und die Kontodaten werden gespeichert, bis Sie oder der Kreditgeber die Löschung verlangen.',
  retentionTokens:
    'Der Zugriff auf Ihre Plattformen wird bis zur Löschung gespeichert (bei laufender Überwachung bis zu deren Ende) und dann auch bei der Plattform widerrufen. Sie können ihn jederzeit selbst auf der Plattform widerrufen.',
  retentionNothingRead:
    'Wenn Sie ablehnen oder der Link abläuft, werden Ihre Einnahmen nie gelesen. Was bereits gespeichert ist (die Anfrage des Kreditgebers, eine verbundene Plattform), bleibt wie alles andere nur bis zur Löschung gespeichert.',
  retentionLanguage: 'Das Sprach-Cookie wird ein Jahr lang gespeichert.',
  privacyRightsTitle: 'Ihre Rechte',
  rightsList:
    'Sie können Auskunft über die zu Ihnen gespeicherten Daten verlangen, eine Kopie in einem übertragbaren Format erhalten sowie die Berichtigung und die Löschung Ihrer Daten verlangen.',
  rightsWithdraw:
    'Sie können Ihre Einwilligung jederzeit widerrufen, indem Sie den Zugriff auf der Plattform widerrufen oder die Löschung verlangen. Das berührt nicht, was bis dahin geschehen ist.',
  rightsHow: ({ lender }) =>
    `Um diese Rechte auszuüben, wenden Sie sich an ${lender}. Als Verantwortlicher bearbeitet ${lender} Ihre Anfrage, und dieser Dienst führt sie im Auftrag aus.`,
  rightsHowUnnamed:
    'Um diese Rechte auszuüben, wenden Sie sich an den Kreditgeber, der Ihnen den Link geschickt hat. Als Verantwortlicher bearbeitet er Ihre Anfrage, und dieser Dienst führt sie im Auftrag aus.',
  rightsComplain: 'Sie können sich außerdem bei der Datenschutzaufsichtsbehörde an Ihrem Wohn- oder Arbeitsort beschweren.',
};
