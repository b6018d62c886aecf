import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EnvError, loadEnv } from './env';

describe('loadEnv', () => {
  it('gives documented defaults', () => {
    const env = loadEnv({});
    expect(env).toMatchObject({ PORT: 3000, HOST: '127.0.0.1', WHETSTONE_DEV: false, LOG_LEVEL: 'info' });
    expect(env.DATABASE_URL).toBeUndefined();
    expect(path.basename(env.WHETSTONE_HOME)).toBe('.whetstone');
    expect(env.HF_ENDPOINT).toBe('https://huggingface.co');
    expect(env.HF_TOKEN).toBeUndefined();
  });

  it('reads the hub settings, and never prints a token', () => {
    expect(loadEnv({ HF_ENDPOINT: 'http://hub.local:8080/', HF_TOKEN: 'hf_abc' })).toMatchObject({ HF_ENDPOINT: 'http://hub.local:8080', HF_TOKEN: 'hf_abc' });
    expect(() => loadEnv({ HF_TOKEN: 'ghp_secretvalue' })).toThrow('HF_TOKEN=(hidden): must be a Hugging Face access token');
    expect(() => loadEnv({ HF_TOKEN: 'ghp_secretvalue' })).not.toThrow(/secretvalue/);
  });

  it('names every bad variable and what is wrong with it', () => {
    let message = '';
    try {
      loadEnv({ PORT: 'eighty', DATABASE_URL: 'mysql://x', LOG_LEVEL: 'loud' });
    } catch (error) {
      expect(error).toBeInstanceOf(EnvError);
      message = (error as Error).message;
    }
    expect(message).toMatch(/PORT="eighty"/);
    expect(message).toMatch(/DATABASE_URL="mysql:\/\/x": must be a postgresql:\/\/ URL/);
    expect(message).toMatch(/LOG_LEVEL="loud"/);
  });

  it('treats empty values as unset', () => {
    expect(loadEnv({ DATABASE_URL: '', PORT: '' }).PORT).toBe(3000);
  });
});
