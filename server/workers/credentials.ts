/** A registration token for a worker pool, shown once to the admin who made it. */
export const WORKER_TOKEN_PREFIX = 'wst_';
/** A registered worker's own credential, returned once at registration. */
export const WORKER_CREDENTIAL_PREFIX = 'wsw_';
/** How much of a token is kept in clear to tell tokens apart. */
export const DISPLAY_PREFIX_LENGTH = 12;
