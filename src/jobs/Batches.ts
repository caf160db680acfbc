/** How much a jobs run takes in one batch ([D80] rev. 2, issue 27). */

/** rows per batch at most: each batch is one short transaction, whatever is due ([D80] rev. 2) */
export const JOBS_BATCH = 500

/**
 * Issue 27: batches are sized by time. A run starts with JOBS_BATCH_FIRST rows and sizes each
 * next batch so that it takes about JOBS_BATCH_TARGET_MS (between JOBS_BATCH_MIN and JOBS_BATCH
 * rows): what a batch holds the thread and its connection for stays short however slow the
 * machine, and the pause after it is as short.
 */
export const JOBS_BATCH_FIRST = 100
export const JOBS_BATCH_MIN = 20
export const JOBS_BATCH_TARGET_MS = 25

/** the next batch's rows after one of `rows` that took `ms` */
export const nextBatchSize = (rows: number, ms: number): number =>
  Math.max(JOBS_BATCH_MIN, Math.min(JOBS_BATCH, Math.round((rows * JOBS_BATCH_TARGET_MS) / Math.max(ms, 1))))
