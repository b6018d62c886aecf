// The cluster provider agent's protocol (issue 22). A provider agent runs where the cluster's
// commands work (a Slurm login node: `npx whetstone provider slurm`), polls the server with its
// credential (wsp_…), reports what became of the launches it was given, and gets back launch and
// cancel orders and the launches to keep watching. The agent keeps no state: after a restart the
// server's `watch` list tells it which cluster jobs are its own.
import { z } from 'zod';

export const PROVIDER_TOKEN_PREFIX = 'wsp_';
export const PROVIDER_POLL_ROUTE = '/api/providers/poll';

const slurmName = (what: string) => z.string().regex(/^[A-Za-z0-9_.+-]{1,64}$/, `${what}: letters, digits, _ . + - (at most 64)`);
/** Slurm's time limit forms: minutes, MM:SS, H:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS. */
const SLURM_TIME = /^(\d+|\d+:\d{1,2}(:\d{1,2})?|\d+-\d{1,2}(:\d{1,2}(:\d{1,2})?)?)$/;

/** A Slurm provider's settings, as an admin saves them (API, CLI and the Cluster page). */
export const slurmSettingsSchema = z
  .object({
    partition: slurmName('partition'),
    account: slurmName('account').optional(),
    qos: slurmName('qos').optional(),
    /** The generic resources of one worker, as sbatch's --gres takes them: gpu:2, gpu:a100:1. */
    gres: z
      .string()
      .regex(/^[a-z][a-z0-9_]*(:[A-Za-z0-9_.-]+)?:[1-9]\d{0,2}$/, 'gres: name[:type]:count, e.g. gpu:a100:1')
      .optional(),
    /** What the workers advertise: the device kind jobs must ask for (or ask for none) to count as theirs. */
    deviceKind: z.enum(['CUDA', 'WEBGPU', 'CPU', 'WASM']).default('CUDA'),
    /** Devices one worker brings (the gres count on GPU nodes). */
    devicesPerWorker: z.number().int().min(1).max(64).default(1),
    cpusPerWorker: z.number().int().min(1).max(512).default(4),
    memoryMbPerWorker: z.number().int().min(256).max(4_000_000).default(16_384),
    timeLimit: z.string().regex(SLURM_TIME, 'timeLimit: minutes, H:MM:SS or D-HH:MM:SS').default('1-00:00:00'),
    /** The checkout on the cluster's shared filesystem the workers run from (npm ci done there). */
    installPath: z
      .string()
      .min(2)
      .max(500)
      .regex(/^\/[^\n\0]*$/, 'installPath: an absolute path'),
    /** More #SBATCH lines, one option each (e.g. --constraint=a100). */
    extraDirectives: z
      .array(z.string().regex(/^--[a-z][a-z-]*(=[^\n\0]{1,200})?$/, 'extraDirectives: one --option[=value] each'))
      .max(20)
      .default([]),
    maxWorkers: z.number().int().min(1).max(1_000).default(4),
    maxPendingLaunches: z.number().int().min(1).max(100).default(2),
    /** A worker idle this long drains and exits, handing its node back. */
    idleSeconds: z.number().int().min(5).max(86_400).default(300),
    /** A launch that runs this long without its worker registering is cancelled and counted as failed. */
    registerTimeoutSeconds: z.number().int().min(10).max(3_600).default(300),
    /** Slurm's notice before the time limit or a preemption (--signal=B:USR1@N): the worker drains. */
    noticeSeconds: z.number().int().min(0).max(3_600).default(120),
  })
  .strict()
  .refine((s) => !s.gres || Number(s.gres.split(':').at(-1)) === s.devicesPerWorker, {
    message: 'devicesPerWorker must equal the count in gres',
    path: ['devicesPerWorker'],
  });
export type SlurmSettings = z.infer<typeof slurmSettingsSchema>;

/** Launch states the agent reports, in the cluster's terms. */
const reportedLaunchStateSchema = z.enum(['PENDING', 'RUNNING', 'ENDED', 'FAILED', 'CANCELLED']);

export const launchReportSchema = z.object({
  launchId: z.string().min(1).max(64),
  /** The cluster's job id, once it has one. */
  externalId: z
    .string()
    .regex(/^\d{1,20}$/)
    .optional(),
  state: reportedLaunchStateSchema,
  /** The cluster's words: squeue's %r while pending, sbatch's error when it failed. */
  reason: z.string().max(2_000).optional(),
});
export type LaunchReport = z.infer<typeof launchReportSchema>;

export const pollRequestSchema = z.object({
  agent: z.object({ host: z.string().max(255), version: z.string().max(40) }),
  reports: z.array(launchReportSchema).max(1_000),
});


export const launchOrderSchema = z.object({
  type: z.literal('launch'),
  launchId: z.string(),
  /** The registration token made for this launch only: into the job's environment, never its script. */
  workerToken: z.string().startsWith('wst_'),
  settings: slurmSettingsSchema,
});
const cancelOrderSchema = z.object({
  type: z.literal('cancel'),
  launchId: z.string(),
  externalId: z.string(),
  reason: z.string(),
});
export const pollResponseSchema = z.object({
  orders: z.array(z.discriminatedUnion('type', [launchOrderSchema, cancelOrderSchema])),
  /** Launches with a cluster job the agent should report on (squeue), until they end. */
  watch: z.array(z.object({ launchId: z.string(), externalId: z.string() })),
  pollSeconds: z.number().positive(),
});
export type PollResponse = z.infer<typeof pollResponseSchema>;
export type LaunchOrder = z.infer<typeof launchOrderSchema>;
