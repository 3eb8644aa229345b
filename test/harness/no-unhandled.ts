// Fails the test file when anything (the library included) leaves a promise rejection unhandled.
const unhandled: unknown[] = [];
const record = (reason: unknown): void => {
  unhandled.push(reason);
};
process.on('unhandledRejection', record);

afterAll(() => {
  process.off('unhandledRejection', record);
  expect(unhandled).toEqual([]);
});
