// cluster-key-slot (the slot function ioredis itself routes with) ships no types.
declare module 'cluster-key-slot' {
  function calculateSlot(key: string | Buffer): number;
  export = calculateSlot;
}
