import type { Messages } from './messages.ts';

/** « mois » does not change in the plural; a function still, like the other catalogues. */
const monthsText = (months: number) => `${months} mois`;

export const fr: Messages = {
  languageName: 'Français',
  languageNav: 'Langue',
  privacyLink: 'Protection des données',
  footerOperatedFor: ({ lender }) => `Cette page est gérée par Creator Income Verification Service pour le compte de ${lender}.`,
  footerOperated: 'Cette page est gérée par Creator Income Verification Service pour le compte du prêteur qui vous a envoyé le lien.',
  lenderWithAccount: ({ lender, account }) => `${lender} (compte : ${account})`,
  backToConsent: 'Retour à la page de consentement',
  closePage: 'Vous pouvez fermer cette page.',
  returnToLender: ({ lender }) => `Revenir à ${lender}`,

  consentTitle: ({ lender }) => `${lender} demande à vérifier vos revenus de créateur`,
  consentIntro: ({ lender }) =>
    `${lender} ne voit jamais vos mots de passe et ne se connecte jamais à vos comptes. Vous connectez chaque plateforme ci-dessous en lecture seule ; le service lit vos revenus, en établit une synthèse pour ${lender} et ne partage que cette synthèse.`,
  connectedNotice: ({ platform }) => `${platform} est connecté.`,
  whatIsRead: 'Ce qui est lu',
  readsYoutube: "Les revenus estimés par mois dans YouTube Analytics, et l'adresse e-mail du compte Google.",
  readsStripe: "Les mouvements du solde (paiements et remboursements), pour calculer votre volume brut par mois, et l'adresse e-mail du compte.",
  scopeYoutube: 'Autorisations Google en lecture seule : yt-analytics-monetary.readonly, email',
  scopeStripe: 'Stripe Connect, accès read_only (lecture seule)',
  statusLabel: 'État :',
  statusConnected: 'Connecté',
  statusNotConnected: 'Non connecté',
  connectButton: ({ platform }) => `Connecter ${platform}`,
  statusUnavailable: 'Indisponible',
  noPlatformAvailable: ({ lender }) =>
    `Ce service ne peut pour le moment connecter aucune des plateformes demandées par ${lender} : vos revenus ne peuvent donc pas être vérifiés par ce lien pour l’instant. Merci de prévenir ${lender}, qui pourra vous envoyer un nouveau lien.`,
  platformNotOfferedText: ({ platform, lender }) =>
    `${platform} ne peut pas être connecté par ce service pour le moment ; il n’y a donc pas de bouton pour cette plateforme. Vous pouvez continuer avec les autres plateformes ou demander à ${lender} comment procéder.`,
  neverTitle: "Ce qui n'est jamais vu ni partagé",
  neverPasswords: 'Vos mots de passe : vous vous identifiez sur la page de la plateforme elle-même, jamais ici.',
  neverContent: 'Vos vidéos, vos clients, vos messages et les données de votre audience.',
  neverChanges: 'Toute possibilité de modifier vos comptes : l’accès est en lecture seule et vous pouvez le révoquer à tout moment sur la plateforme.',
  neverEmail: ({ lender }) =>
    `Votre adresse e-mail n’est conservée que pour répondre aux demandes relatives à vos données ; elle n’est pas transmise à ${lender}.`,
  finishTitle: 'Donner votre consentement',
  finishText: ({ lender }) =>
    `Lorsque vous donnez votre consentement, les revenus des plateformes connectées sont lus et une synthèse est envoyée à ${lender}. Une plateforme que vous ne connectez pas est signalée comme sans données.`,
  finishButton: 'Donner mon consentement et terminer',
  finishHint: 'Connectez au moins une plateforme pour continuer.',
  expiresOn: ({ date }) => `Ce lien expire le ${date}.`,
  declineTitle: 'Vous ne souhaitez pas partager ?',
  declineText: ({ lender }) => `Vous pouvez refuser. Rien n’est lu, et ${lender} est informé que vous ne souhaitez pas partager.`,
  declineLink: 'Je ne souhaite pas partager',

  declineConfirmTitle: ({ lender }) => `Refuser de partager vos revenus avec ${lender} ?`,
  declineConfirmText: ({ lender }) =>
    `Si vous refusez, rien n’est lu dans vos comptes, pas même sur une plateforme déjà connectée, et ${lender} est informé que vous avez choisi de ne pas partager.`,
  declineConfirmFinal: ({ lender }) => `Ce lien cessera alors de fonctionner. Si vous changez d’avis plus tard, demandez un nouveau lien à ${lender}.`,
  declineConfirmButton: 'Oui, je ne souhaite pas partager',
  declineConfirmBack: 'Non, revenir à la page de consentement',

  monitoringTitle: 'Accès continu',
  monitoringPlanned: ({ lender, months }) =>
    `${lender} demande aussi un accès continu : vos revenus sont lus à nouveau une fois par mois, pendant ${monthsText(months)} après votre première synthèse, et chaque synthèse mise à jour est envoyée à ${lender}.`,
  monitoringUntil: ({ lender, date }) =>
    `${lender} demande aussi un accès continu : vos revenus sont lus à nouveau une fois par mois jusqu’au ${date}, et chaque synthèse mise à jour est envoyée à ${lender}.`,
  monitoringStopAnyTime: ({ lender }) =>
    `Vous pouvez y mettre fin à tout moment depuis ce même lien. ${lender} ne reçoit alors plus de mises à jour ; les synthèses déjà envoyées restent chez ${lender}.`,
  monitoringConsentCovers: 'Votre consentement couvre aussi les mises à jour mensuelles décrites plus haut.',
  monitoringAfterProcessing: ({ lender, months }) =>
    `Après cette première synthèse, vos revenus sont lus à nouveau une fois par mois pendant ${monthsText(months)}, et chaque synthèse mise à jour est envoyée à ${lender}. Dès que la première synthèse est envoyée, vous pouvez y mettre fin à tout moment depuis ce même lien.`,

  sharingTitle: 'Ce qui est encore partagé',
  sharingActive: ({ lender, date }) =>
    `Jusqu’au ${date}, vos revenus sont lus à nouveau une fois par mois sur les plateformes que vous avez connectées, et ${lender} reçoit une synthèse mise à jour.`,
  stopButton: 'Arrêter le partage',
  stopConfirmTitle: ({ lender }) => `Arrêter de partager vos revenus avec ${lender} ?`,
  stopConfirmText: ({ lender }) =>
    `Si vous arrêtez, ${lender} ne recevra plus de mises à jour : vos revenus ne sont plus lus, et l’accès en lecture seule à vos plateformes est abandonné.`,
  stopConfirmKept: ({ lender }) =>
    `Les synthèses déjà envoyées restent chez ${lender}. Ce choix est définitif ; pour partager à nouveau plus tard, demandez un nouveau lien à ${lender}.`,
  stopConfirmButton: 'Oui, arrêter le partage',
  stopConfirmBack: 'Non, continuer le partage',
  stopRefusedText:
    'Pour votre sécurité, le partage n’a pas été arrêté : ce formulaire n’a pas été ouvert dans ce navigateur, ou il est trop ancien. Ouvrez à nouveau votre lien et appuyez encore sur « Arrêter le partage ».',
  stoppedTitle: ({ lender }) => `Vous avez arrêté de partager vos revenus avec ${lender}`,
  sharingEndedTitle: ({ lender }) => `Vos revenus ne sont plus partagés avec ${lender}`,
  endedWindowOver: ({ date }) => `La période que vous aviez acceptée s’est terminée le ${date}.`,
  endedByYou: ({ lender }) => `Le partage est arrêté : ${lender} ne reçoit plus de mises à jour de vos revenus.`,
  endedByLender: ({ lender }) => `${lender} a arrêté les mises à jour mensuelles.`,
  endedAccessWithdrawn: 'L’accès en lecture à une plateforme que vous aviez connectée a été retiré : vos revenus ne peuvent donc plus être lus.',
  endedOther: 'Les mises à jour mensuelles sont terminées.',
  endedKept: ({ lender }) => `Les synthèses envoyées jusque-là restent chez ${lender}. Plus rien n’est lu dans vos comptes.`,

  sandboxTitle: ({ platform }) => `${platform} (sandbox) : autoriser l’accès en lecture seule ?`,
  sandboxHeading: ({ platform }) => `Connexion à ${platform} (simulation sandbox)`,
  sandboxText: ({ platform }) =>
    `Cette sandbox remplace l’écran de consentement de ${platform} : aucun compte réel n’est connecté et les revenus sont synthétiques.`,
  sandboxAsks: ({ lender }) => `La vérification pour ${lender} demande :`,
  sandboxAllow: 'Autoriser l’accès en lecture seule',
  sandboxDeny: 'Refuser',

  deniedTitle: ({ platform }) => `Vous n’avez pas donné accès à ${platform}`,
  deniedText: ({ platform }) =>
    `Vous avez choisi de ne pas autoriser l’accès en lecture seule sur la page de ${platform}. Rien n’a été lu sur ${platform}, et la plateforme n’est pas connectée.`,
  providerErrorTitle: ({ platform }) => `${platform} n’a pas pu être connecté`,
  providerErrorText: ({ platform }) =>
    `${platform} n’a pas terminé la connexion : la plateforme n’est donc pas connectée et rien n’a été lu. C’est généralement temporaire.`,
  deniedNextTitle: 'Que souhaitez-vous faire ?',
  deniedTryAgainText: ({ platform }) => `Si vous avez refusé par erreur, ou si vous voulez réessayer, vous pouvez retourner sur ${platform}.`,
  tryAgainButton: ({ platform }) => `Réessayer avec ${platform}`,
  deniedDeclineText: ({ lender }) => `Si vous ne souhaitez pas du tout partager vos revenus avec ${lender}, vous pouvez refuser.`,

  completedTitle: ({ lender }) => `La synthèse de vos revenus a été transmise à ${lender}`,
  completedText: ({ lender, date }) => `La synthèse de vos revenus a été envoyée à ${lender} le ${date}. Vous n’avez plus rien à faire.`,
  processingTitle: 'Merci : vos revenus sont en cours de lecture',
  processingText: ({ lender }) =>
    `Vous avez donné votre consentement. Vos revenus sont en cours de lecture et la synthèse sera envoyée à ${lender}, généralement en quelques minutes. Vous n’avez plus rien à faire.`,
  failedTitle: 'Vos revenus n’ont pas pu être vérifiés',
  failedPlatformError: 'Une plateforme connectée a renvoyé une erreur pendant la lecture de vos revenus.',
  failedConsentRevoked: 'L’accès à une plateforme connectée a été révoqué avant que vos revenus puissent être lus.',
  failedTimeout: 'La lecture de vos revenus a pris trop de temps et a donc été interrompue.',
  failedOther: 'Vos revenus n’ont pas pu être lus.',
  failedNext: ({ lender }) => `${lender} en a été informé. Si vous souhaitez toujours partager vos revenus, demandez un nouveau lien à ${lender}.`,
  declinedTitle: 'Vous avez refusé de partager vos revenus',
  declinedText: ({ lender }) => `${lender} a été informé que vous ne souhaitez pas partager. Rien n’a été lu dans vos comptes.`,
  declinedChangeMind: ({ lender }) => `Si vous changez d’avis, demandez un nouveau lien à ${lender}.`,
  expiredTitle: 'Ce lien a expiré',
  expiredText: ({ lender }) =>
    `La période de consentement s’est terminée sans consentement : rien n’a été lu. Si vous souhaitez toujours partager vos revenus, demandez un nouveau lien à ${lender}.`,
  cancelledTitle: 'Le prêteur a retiré cette demande',
  cancelledText: ({ lender }) => `${lender} n’a plus besoin de cette vérification et l’a retirée. Vous n’avez plus rien à faire, et plus rien ne sera lu.`,
  closedTitle: 'Vous n’avez plus rien à faire',
  closedText: 'Cette vérification n’a plus besoin de rien de votre part.',
  outcomeWhen: ({ date }) => `Dernière modification : ${date}.`,

  unknownLinkTitle: 'Ce lien ne fonctionne pas',
  unknownLinkText:
    'Le lien de consentement n’est pas valide. Vérifiez que vous avez ouvert le lien complet envoyé par votre prêteur, ou demandez-lui un nouveau lien.',
  unknownPlatformTitle: 'Plateforme inconnue',
  unknownPlatformText: 'Votre prêteur n’a pas demandé cette plateforme.',
  alreadyConnectedTitle: 'Déjà connecté',
  alreadyConnectedText: ({ platform }) => `${platform} est déjà connecté pour cette vérification.`,
  refusedTitle: 'Cela n’a pas fonctionné',
  nothingConnectedText: 'Connectez au moins une plateforme avant de donner votre consentement.',
  providerRefusedText: ({ platform }) => `${platform} n’a pas accordé l’accès en lecture. Essayez de vous connecter à nouveau.`,
  platformUnavailableText: 'La connexion à cette plateforme n’est pas disponible pour le moment. Veuillez réessayer plus tard.',
  signInExpiredText: 'Cette connexion a expiré ou a déjà été utilisée. Ouvrez le lien envoyé par votre prêteur et recommencez.',
  otherBrowserText: ({ platform }) =>
    `Pour votre sécurité, rien n’a été connecté : cette connexion à ${platform} a été commencée dans un autre navigateur. Si vous connectez votre propre compte, ouvrez dans ce navigateur le lien envoyé par votre prêteur et recommencez.`,
  crossSiteTitle: 'Cette demande a été refusée',
  crossSiteText:
    'Pour votre sécurité, ces boutons ne fonctionnent que sur la page de consentement elle-même. Ouvrez le lien envoyé par votre prêteur et réessayez depuis cette page.',
  notFoundTitle: 'Page introuvable',
  notFoundText: 'Cette page n’existe pas.',
  unavailableTitle: 'Veuillez réessayer dans un instant',
  unavailableText: 'Cette page est momentanément indisponible. Rechargez-la dans une minute ; votre progression est conservée.',
  errorTitle: 'Une erreur s’est produite',
  errorText: 'Veuillez réessayer dans une minute. Si le problème persiste, contactez votre prêteur.',

  privacyTitle: 'Protection des données',
  privacyIntro: 'Comment vos données sont traitées lorsque vous faites vérifier vos revenus de créateur sur cette page.',
  privacyWhoTitle: 'Qui est responsable',
  privacyController: ({ lender }) =>
    `${lender} est le responsable du traitement : il a demandé cette vérification, décide de son usage et reçoit la synthèse de vos revenus.`,
  privacyControllerUnnamed:
    'Le prêteur qui vous a envoyé le lien est le responsable du traitement : il a demandé cette vérification, décide de son usage et reçoit la synthèse de vos revenus.',
  privacyProcessor:
    'Creator Income Verification Service est le sous-traitant : il lit vos revenus et établit la synthèse pour le compte du prêteur, dans le cadre d’un contrat de sous-traitance, et n’utilise vos données à aucune autre fin.',
  privacyPurposesTitle: 'À quoi servent vos données',
  purposeVerify: ({ lender }) => `Vérifier, avec votre consentement, vos revenus de plateforme en vue d’une décision de crédit de ${lender}.`,
  purposeNotify: ({ lender }) => `Informer ${lender} lorsque la vérification est terminée, a échoué ou a expiré.`,
  purposeVerifyUnnamed: 'Vérifier, avec votre consentement, vos revenus de plateforme en vue de la décision de crédit du prêteur.',
  purposeNotifyUnnamed: 'Informer le prêteur lorsque la vérification est terminée, a échoué ou a expiré.',
  purposeMonitor:
    'Uniquement si le prêteur a demandé un suivi continu et que vous l’avez accepté sur la page de consentement : relire vos revenus une fois par mois pendant les mois indiqués, et envoyer au prêteur chaque nouvelle synthèse. Vous pouvez l’arrêter à tout moment depuis le lien de consentement.',
  purposeRights: 'Répondre à vos demandes relatives à vos données (accès, copie, effacement).',
  privacyDataTitle: 'Ce qui est lu et conservé',
  dataIncome: 'Vos revenus mensuels sur chaque plateforme que vous connectez, pour les 24 derniers mois.',
  dataAccount: 'L’identifiant et l’adresse e-mail du compte connecté. L’adresse e-mail est chiffrée et n’est pas transmise au prêteur.',
  dataTokens: 'L’accès en lecture seule accordé par la plateforme, chiffré et jamais montré à personne.',
  dataSummary: 'La synthèse envoyée au prêteur : moyennes, tendance, stabilité et une évaluation d’éligibilité. Pas vos paiements individuels.',
  dataLanguage:
    'Si vous choisissez une langue sur ces pages, un cookie la mémorise. Deux cookies de courte durée protègent vos actions ici : l’un lie la connexion d’une plateforme au navigateur qui l’a commencée, l’autre lie une confirmation « Arrêter le partage » au vôtre. Rien ne vous suit.',
  privacyRetentionTitle: 'Durée de conservation',
  retentionLink: 'Le lien de consentement est valable 7 jours ; il expire ensuite.',
  retentionData: 'Vos revenus, la synthèse et les données du compte sont conservés jusqu’à ce que vous ou le prêteur en demandiez l’effacement.',
  retentionTokens:
    'L’accès à vos plateformes est conservé jusqu’à l’effacement (avec un suivi continu, jusqu’à la fin de celui-ci), puis révoqué également auprès de la plateforme. Vous pouvez le révoquer vous-même sur la plateforme à tout moment.',
  retentionNothingRead:
    'Si vous refusez ou si le lien expire, vos revenus ne sont jamais lus. Ce qui est déjà conservé (la demande du prêteur, une plateforme que vous avez connectée) ne l’est, comme le reste, que jusqu’à son effacement.',
  retentionLanguage: 'Le cookie de langue est conservé pendant un an.',
  privacyRightsTitle: 'Vos droits',
  rightsList:
    'Vous pouvez demander à consulter les données vous concernant, à en recevoir une copie dans un format portable, à les faire rectifier et à les faire effacer.',
  rightsWithdraw:
    'Vous pouvez retirer votre consentement à tout moment, en révoquant l’accès sur la plateforme ou en demandant l’effacement. Cela ne remet pas en cause ce qui a été fait auparavant.',
  rightsHow: ({ lender }) =>
    `Pour exercer ces droits, contactez ${lender}. En tant que responsable du traitement, il traite votre demande, et ce service l’exécute pour son compte.`,
  rightsHowUnnamed:
    'Pour exercer ces droits, contactez le prêteur qui vous a envoyé le lien. En tant que responsable du traitement, il traite votre demande, et ce service l’exécute pour son compte.',
  rightsComplain: 'Vous pouvez également introduire une réclamation auprès de l’autorité de protection des données de votre lieu de résidence ou de travail.',
};
