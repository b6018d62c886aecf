import type { Db } from '../db/client';

export const OPEN_SIGN_UP = 'signup.open';

/** Open sign-up is on until an installation admin turns it off. */
export async function isOpenSignUp(db: Db): Promise<boolean> {
  const row = await db.setting.findUnique({ where: { key: OPEN_SIGN_UP } });
  return row ? row.value === true : true;
}
