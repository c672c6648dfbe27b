// The reference implementation's URLSearchParams, used as the oracle in the fuzz tests.
declare module 'whatwg-url' {
  export const URLSearchParams: typeof globalThis.URLSearchParams;
}
