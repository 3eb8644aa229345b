/** Injection tokens of the lottery app. */
export const LOTTERY_CONFIG = Symbol('LOTTERY_CONFIG');
export const LOTTERY_DATA = Symbol('LOTTERY_DATA');
