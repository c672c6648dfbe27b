/** The part of ua-parser-js 1.x that agent-lookup.ts uses (the package ships no types; @types/ua-parser-js is for 0.7). */
declare module 'ua-parser-js' {
  interface Named { name?: string; version?: string }
  interface Result { ua: string; browser: Named; os: Named; device: { type?: string; vendor?: string; model?: string } }
  class UAParser {
    constructor(ua?: string);
    getResult(): Result;
  }
  export default UAParser;
}
