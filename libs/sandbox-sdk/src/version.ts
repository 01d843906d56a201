// set by the package build (scripts/build-package.ts) to the release's version
declare const SANDBOX_SCALE_SDK_VERSION: string | undefined;

/** The release this SDK was built for; `development` when it runs from the repository's sources. */
export const SDK_VERSION: string = typeof SANDBOX_SCALE_SDK_VERSION === 'string' ? SANDBOX_SCALE_SDK_VERSION : 'development';
