import type { Messages } from './messages.ts';

/** Each catalogue writes its own plural: Spanish's only singular is one. */
const monthsText = (months: number) => (months === 1 ? '1 mes' : `${months} meses`);

export const es: Messages = {
  languageName: 'Español',
  languageNav: 'Idioma',
  privacyLink: 'Aviso de privacidad',
  footerOperatedFor: ({ lender }) => `Esta página la gestiona Creator Income Verification Service en nombre de ${lender}.`,
  footerOperated: 'Esta página la gestiona Creator Income Verification Service en nombre de la entidad prestamista que le envió el enlace.',
  lenderWithAccount: ({ lender, account }) => `${lender} (cuenta: ${account})`,
  backToConsent: 'Volver a la página de consentimiento',
  closePage: 'Puede cerrar esta página.',
  returnToLender: ({ lender }) => `Volver a ${lender}`,

  consentTitle: ({ lender }) => `${lender} solicita verificar sus ingresos como creador`,
  consentIntro: ({ lender }) =>
    `${lender} nunca ve sus contraseñas ni accede a sus cuentas. Usted conecta cada plataforma con acceso de solo lectura; el servicio lee sus ingresos, elabora un resumen para ${lender} y comparte únicamente ese resumen.`,
  connectedNotice: ({ platform }) => `${platform} está conectado.`,
  whatIsRead: 'Qué se lee',
  readsYoutube: 'Los ingresos estimados por mes de YouTube Analytics y la dirección de correo electrónico de la cuenta de Google.',
  readsStripe: 'Los movimientos del saldo (pagos y reembolsos), para calcular su volumen bruto por mes, y el correo electrónico de la cuenta.',
  scopeYoutube: 'Permisos de Google de solo lectura: yt-analytics-monetary.readonly, email',
  scopeStripe: 'Stripe Connect, acceso read_only (solo lectura)',
  statusLabel: 'Estado:',
  statusConnected: 'Conectado',
  statusNotConnected: 'No conectado',
  connectButton: ({ platform }) => `Conectar ${platform}`,
  statusUnavailable: 'No disponible',
  noPlatformAvailable: ({ lender }) =>
    `Este servicio no puede conectar en este momento ninguna de las plataformas que ${lender} ha solicitado, así que sus ingresos no se pueden verificar ahora con este enlace. Avise a ${lender}; podrá enviarle un enlace nuevo.`,
  platformNotOfferedText: ({ platform, lender }) =>
    `En este momento no es posible conectar ${platform} a través de este servicio, por eso no hay botón para esta plataforma. Puede continuar con las demás plataformas o preguntar a ${lender} cómo proceder.`,
  neverTitle: 'Lo que nunca se ve ni se comparte',
  neverPasswords: 'Sus contraseñas: usted inicia sesión en la propia página de la plataforma, nunca aquí.',
  neverContent: 'Sus vídeos, clientes, mensajes y datos de su audiencia.',
  neverChanges: 'Cualquier posibilidad de modificar sus cuentas: el acceso es de solo lectura y puede revocarlo en la plataforma en cualquier momento.',
  neverEmail: ({ lender }) => `Su dirección de correo electrónico solo se guarda para atender solicitudes de protección de datos; no se entrega a ${lender}.`,
  finishTitle: 'Dar su consentimiento',
  finishText: ({ lender }) =>
    `Cuando da su consentimiento, se leen los ingresos de las plataformas conectadas y se envía un resumen a ${lender}. Una plataforma que deje sin conectar figurará como sin datos.`,
  finishButton: 'Dar mi consentimiento y terminar',
  finishHint: 'Conecte al menos una plataforma para continuar.',
  expiresOn: ({ date }) => `Este enlace caduca el ${date}.`,
  declineTitle: '¿No quiere compartir?',
  declineText: ({ lender }) => `Puede decir que no. No se lee nada y se informa a ${lender} de que no desea compartir.`,
  declineLink: 'No quiero compartir',

  declineConfirmTitle: ({ lender }) => `¿Rechazar compartir sus ingresos con ${lender}?`,
  declineConfirmText: ({ lender }) =>
    `Si rechaza, no se lee nada de sus cuentas, ni siquiera de una plataforma que ya haya conectado, y se informa a ${lender} de que ha decidido no compartir.`,
  declineConfirmFinal: ({ lender }) =>
    `A partir de entonces este enlace dejará de funcionar. Si más adelante cambia de opinión, pida un enlace nuevo a ${lender}.`,
  declineConfirmButton: 'Sí, no quiero compartir',
  declineConfirmBack: 'No, volver a la página de consentimiento',

  monitoringTitle: 'Acceso continuo',
  monitoringPlanned: ({ lender, months }) =>
    `${lender} también solicita acceso continuo: sus ingresos se vuelven a leer una vez al mes durante ${monthsText(months)} después de su primer resumen, y cada resumen actualizado se envía a ${lender}.`,
  monitoringUntil: ({ lender, date }) =>
    `${lender} también solicita acceso continuo: sus ingresos se vuelven a leer una vez al mes hasta el ${date}, y cada resumen actualizado se envía a ${lender}.`,
  monitoringStopAnyTime: ({ lender }) =>
    `Puede detenerlo en cualquier momento desde este mismo enlace. ${lender} dejará entonces de recibir actualizaciones; los resúmenes ya enviados se quedan en poder de ${lender}.`,
  monitoringConsentCovers: 'Su consentimiento incluye también las actualizaciones mensuales descritas arriba.',
  monitoringAfterProcessing: ({ lender, months }) =>
    `Después de este primer resumen, sus ingresos se vuelven a leer una vez al mes durante ${monthsText(months)}, y cada resumen actualizado se envía a ${lender}. En cuanto se envíe el primer resumen, podrá detenerlo en cualquier momento desde este mismo enlace.`,

  sharingTitle: 'Qué se sigue compartiendo',
  sharingActive: ({ lender, date }) =>
    `Hasta el ${date}, sus ingresos se vuelven a leer una vez al mes de las plataformas que conectó, y ${lender} recibe un resumen actualizado.`,
  stopButton: 'Dejar de compartir',
  stopConfirmTitle: ({ lender }) => `¿Dejar de compartir sus ingresos con ${lender}?`,
  stopConfirmText: ({ lender }) =>
    `Si deja de compartir, ${lender} ya no recibirá actualizaciones: sus ingresos no se vuelven a leer y se renuncia al acceso de solo lectura a sus plataformas.`,
  stopConfirmKept: ({ lender }) =>
    `Los resúmenes ya enviados se quedan en poder de ${lender}. No se puede deshacer; si más adelante quiere volver a compartir, pida un enlace nuevo a ${lender}.`,
  stopConfirmButton: 'Sí, dejar de compartir',
  stopConfirmBack: 'No, seguir compartiendo',
  stopRefusedText:
    'Por su seguridad, no se ha dejado de compartir: este formulario no se abrió en este navegador o es demasiado antiguo. Vuelva a abrir su enlace y pulse de nuevo «Dejar de compartir».',
  stoppedTitle: ({ lender }) => `Ha dejado de compartir sus ingresos con ${lender}`,
  sharingEndedTitle: ({ lender }) => `Sus ingresos ya no se comparten con ${lender}`,
  endedWindowOver: ({ date }) => `El periodo que aceptó terminó el ${date}.`,
  endedByYou: ({ lender }) => `Se ha dejado de compartir: ${lender} ya no recibe actualizaciones de sus ingresos.`,
  endedByLender: ({ lender }) => `${lender} ha detenido las actualizaciones mensuales.`,
  endedAccessWithdrawn: 'Se retiró el acceso de lectura a una plataforma que conectó, así que ya no se pueden leer sus ingresos.',
  endedOther: 'Las actualizaciones mensuales han terminado.',
  endedKept: ({ lender }) => `Los resúmenes enviados hasta entonces se quedan en poder de ${lender}. Ya no se lee nada más de sus cuentas.`,

  sandboxTitle: ({ platform }) => `${platform} (sandbox): ¿permitir el acceso de solo lectura?`,
  sandboxHeading: ({ platform }) => `Inicio de sesión en ${platform} (simulación sandbox)`,
  sandboxText: ({ platform }) =>
    `Este sandbox sustituye a la pantalla de consentimiento de ${platform}: no se conecta ninguna cuenta real y los ingresos son sintéticos.`,
  sandboxAsks: ({ lender }) => `La verificación para ${lender} solicita:`,
  sandboxAllow: 'Permitir el acceso de solo lectura',
  sandboxDeny: 'Denegar',

  deniedTitle: ({ platform }) => `No ha dado acceso a ${platform}`,
  deniedText: ({ platform }) =>
    `Ha decidido no permitir el acceso de solo lectura en la página de ${platform}. No se ha leído nada de ${platform} y la plataforma no está conectada.`,
  providerErrorTitle: ({ platform }) => `No se ha podido conectar ${platform}`,
  providerErrorText: ({ platform }) => `${platform} no completó el inicio de sesión, así que no está conectado y no se ha leído nada. Suele ser algo pasajero.`,
  deniedNextTitle: '¿Qué desea hacer?',
  deniedTryAgainText: ({ platform }) => `Si pulsó Denegar por error o quiere intentarlo de nuevo, puede volver a ${platform}.`,
  tryAgainButton: ({ platform }) => `Intentarlo de nuevo con ${platform}`,
  deniedDeclineText: ({ lender }) => `Si no quiere compartir sus ingresos con ${lender} en absoluto, puede rechazarlo.`,

  completedTitle: ({ lender }) => `El resumen de sus ingresos se ha compartido con ${lender}`,
  completedText: ({ lender, date }) => `El resumen de sus ingresos se envió a ${lender} el ${date}. No necesita hacer nada más.`,
  processingTitle: 'Gracias: se están leyendo sus ingresos',
  processingText: ({ lender }) =>
    `Ha dado su consentimiento. Sus ingresos se están leyendo ahora y el resumen se enviará a ${lender}, normalmente en pocos minutos. No necesita hacer nada más.`,
  failedTitle: 'No se han podido verificar sus ingresos',
  failedPlatformError: 'Una plataforma conectada devolvió un error mientras se leían sus ingresos.',
  failedConsentRevoked: 'Se retiró el acceso a una plataforma conectada antes de que pudieran leerse sus ingresos.',
  failedTimeout: 'La lectura de sus ingresos tardó demasiado y se detuvo.',
  failedOther: 'No se han podido leer sus ingresos.',
  failedNext: ({ lender }) => `Se ha informado a ${lender}. Si aún quiere compartir sus ingresos, pida un enlace nuevo a ${lender}.`,
  declinedTitle: 'Ha rechazado compartir sus ingresos',
  declinedText: ({ lender }) => `Se ha informado a ${lender} de que no desea compartir. No se ha leído nada de sus cuentas.`,
  declinedChangeMind: ({ lender }) => `Si cambia de opinión, pida un enlace nuevo a ${lender}.`,
  expiredTitle: 'Este enlace ha caducado',
  expiredText: ({ lender }) =>
    `El plazo para dar el consentimiento terminó sin que se diera, así que no se ha leído nada. Si aún quiere compartir sus ingresos, pida un enlace nuevo a ${lender}.`,
  cancelledTitle: 'La entidad prestamista ha retirado esta solicitud',
  cancelledText: ({ lender }) => `${lender} ya no necesita esta verificación y la ha retirado. No necesita hacer nada más y no se leerá nada más.`,
  closedTitle: 'No necesita hacer nada más',
  closedText: 'Esta verificación ya no necesita nada de usted.',
  outcomeWhen: ({ date }) => `Último cambio: ${date}.`,

  unknownLinkTitle: 'Este enlace no funciona',
  unknownLinkText:
    'El enlace de consentimiento no es válido. Compruebe que ha abierto el enlace completo que le envió su entidad prestamista o pídale uno nuevo.',
  unknownPlatformTitle: 'Plataforma desconocida',
  unknownPlatformText: 'Su entidad prestamista no ha solicitado esta plataforma.',
  alreadyConnectedTitle: 'Ya está conectado',
  alreadyConnectedText: ({ platform }) => `${platform} ya está conectado para esta verificación.`,
  refusedTitle: 'No ha funcionado',
  nothingConnectedText: 'Conecte al menos una plataforma antes de dar su consentimiento.',
  providerRefusedText: ({ platform }) => `${platform} no concedió el acceso de lectura. Intente conectarlo de nuevo.`,
  platformUnavailableText: 'En este momento no es posible conectar esta plataforma. Inténtelo de nuevo más tarde.',
  signInExpiredText: 'Este inicio de sesión ha caducado o ya se utilizó. Abra el enlace que le envió su entidad prestamista y empiece de nuevo.',
  otherBrowserText: ({ platform }) =>
    `Por su seguridad, no se conectó nada: este inicio de sesión en ${platform} se empezó en otro navegador. Si está conectando su propia cuenta, abra en este navegador el enlace que le envió su entidad prestamista y empiece de nuevo allí.`,
  crossSiteTitle: 'Se ha rechazado esta solicitud',
  crossSiteText:
    'Por su seguridad, estos botones solo funcionan en la propia página de consentimiento. Abra el enlace que le envió su entidad prestamista e inténtelo allí.',
  notFoundTitle: 'Página no encontrada',
  notFoundText: 'Esta página no existe.',
  unavailableTitle: 'Vuelva a intentarlo en un momento',
  unavailableText: 'Esta página no está disponible por unos instantes. Vuelva a cargarla en un minuto; su progreso se conserva.',
  errorTitle: 'Algo ha salido mal',
  errorText: 'Vuelva a intentarlo en un minuto. Si sigue ocurriendo, póngase en contacto con su entidad prestamista.',

  privacyTitle: 'Aviso de privacidad',
  privacyIntro: 'Cómo se tratan sus datos cuando verifica sus ingresos como creador a través de esta página.',
  privacyWhoTitle: 'Quién es responsable',
  privacyController: ({ lender }) =>
    `${lender} es el responsable del tratamiento: solicitó esta verificación, decide para qué se usa y recibe el resumen de sus ingresos.`,
  privacyControllerUnnamed:
    'La entidad prestamista que le envió el enlace es la responsable del tratamiento: solicitó esta verificación, decide para qué se usa y recibe el resumen de sus ingresos.',
  privacyProcessor:
    'Creator Income Verification Service es el encargado del tratamiento: lee sus ingresos y elabora el resumen por cuenta de la entidad prestamista, conforme a un contrato de encargo del tratamiento, y no usa sus datos para nada más.',
  privacyPurposesTitle: 'Para qué se usan sus datos',
  purposeVerify: ({ lender }) => `Verificar, con su consentimiento, sus ingresos de plataforma para una decisión de crédito de ${lender}.`,
  purposeNotify: ({ lender }) => `Avisar a ${lender} cuando la verificación haya terminado, haya fallado o haya caducado.`,
  purposeVerifyUnnamed: 'Verificar, con su consentimiento, sus ingresos de plataforma para la decisión de crédito de la entidad prestamista.',
  purposeNotifyUnnamed: 'Avisar a la entidad prestamista cuando la verificación haya terminado, haya fallado o haya caducado.',
  purposeMonitor:
    'Solo si el prestamista pidió un seguimiento continuo y usted lo aceptó en la página de consentimiento: volver a leer sus ingresos una vez al mes durante los meses indicados allí y enviar al prestamista cada nuevo resumen. Puede detenerlo en cualquier momento desde el enlace de consentimiento.',
  purposeRights: 'Atender sus solicitudes de protección de datos (acceso, copia, supresión).',
  privacyDataTitle: 'Qué se lee y se conserva',
  dataIncome: 'Sus ingresos mensuales de cada plataforma que conecte, de los últimos 24 meses.',
  dataAccount:
    'El identificador y la dirección de correo electrónico de la cuenta conectada. El correo se guarda cifrado y no se entrega a la entidad prestamista.',
  dataTokens: 'El acceso de solo lectura que concede la plataforma, guardado cifrado y nunca mostrado a nadie.',
  dataSummary: 'El resumen que recibe la entidad prestamista: medias, tendencia, estabilidad y una valoración de la solvencia. No sus pagos individuales.',
  dataLanguage:
    'Si elige un idioma en estas páginas, una cookie lo recuerda. Dos cookies de corta duración protegen lo que hace aquí: una vincula la conexión de una plataforma al navegador que la inició y otra vincula una confirmación de «Dejar de compartir» al suyo. Nada le rastrea.',
  privacyRetentionTitle: 'Cuánto tiempo se conserva',
  retentionLink: 'El enlace de consentimiento es válido durante 7 días; después caduca.',
  retentionData: 'Sus ingresos, el resumen y los datos de la cuenta se conservan hasta que usted o la entidad prestamista soliciten su supresión.',
  retentionTokens:
    'El acceso a sus plataformas se conserva hasta la supresión (con seguimiento continuo, hasta que termine) y entonces también se revoca en la plataforma. Puede revocarlo usted mismo en la plataforma en cualquier momento.',
  retentionNothingRead:
    'Si rechaza o el enlace caduca, sus ingresos nunca se leen. Lo que ya se conserva (la solicitud de la entidad prestamista, una plataforma que haya conectado) se guarda, como todo lo demás, solo hasta su supresión.',
  retentionLanguage: 'La cookie de idioma se conserva durante un año.',
  privacyRightsTitle: 'Sus derechos',
  rightsList: 'Puede solicitar ver los datos que se conservan sobre usted, recibir una copia en un formato portable, que se rectifiquen y que se supriman.',
  rightsWithdraw:
    'Puede retirar su consentimiento en cualquier momento, revocando el acceso en la plataforma o solicitando la supresión. Esto no afecta a lo realizado anteriormente.',
  rightsHow: ({ lender }) =>
    `Para ejercer estos derechos, diríjase a ${lender}. Como responsable del tratamiento, gestiona su solicitud, y este servicio la ejecuta por su cuenta.`,
  rightsHowUnnamed:
    'Para ejercer estos derechos, diríjase a la entidad prestamista que le envió el enlace. Como responsable del tratamiento, gestiona su solicitud, y este servicio la ejecuta por su cuenta.',
  rightsComplain: 'También puede presentar una reclamación ante la autoridad de protección de datos del lugar donde vive o trabaja.',
};
