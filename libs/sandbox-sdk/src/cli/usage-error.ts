import { SdkError } from '../errors';

/** A command line the plugin cannot act on; printed with the usage, exit code 1. */
export class UsageError extends SdkError {}
