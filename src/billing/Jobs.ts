import { Layer } from "effect"

/** The scheduler of [D80], on one instance at a time. Issue 4 fills this in. */
export const BillingJobs = Layer.empty
