/**
 * A point inside running work where it waits for the test: the work calls `reached()`, which
 * settles `entered` and then waits until the test calls `open()`. The test reads, between the
 * two, what others see while the work is inside.
 */
export function gate(): { entered: Promise<void>; reached(): Promise<void>; open(): void } {
  let enter!: () => void;
  let open!: () => void;
  const entered = new Promise<void>((resolve) => (enter = resolve));
  const opened = new Promise<void>((resolve) => (open = resolve));
  return {
    entered,
    reached: () => {
      enter();
      return opened;
    },
    open,
  };
}
