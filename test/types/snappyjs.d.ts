/** snappyjs (raw Snappy blocks, as Parquet's SNAPPY codec holds them) ships no types: the tests read the module's Snappy back with it. */
declare module 'snappyjs' {
  /** `input` compressed as one raw Snappy block, of the same type. */
  export function compress<T extends Uint8Array | ArrayBuffer>(input: T): T;
  export function uncompress<T extends Uint8Array | ArrayBuffer>(input: T, maxLength?: number): T;
  const snappy: { compress: typeof compress; uncompress: typeof uncompress };
  export default snappy;
}
