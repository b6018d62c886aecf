'use client';
import { createAuthClient } from 'better-auth/react';

/** better-auth's browser client: sign up, sign in, sign out, change password. Same origin. */
export const authClient = createAuthClient({ basePath: '/api/auth' });
