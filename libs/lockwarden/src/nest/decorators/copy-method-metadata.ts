/**
 * Makes `to` look like `from` to everything that reflects on methods: every
 * reflect-metadata key (so @Cron, Swagger or route metadata set before us
 * survives), and `name` and `length`.
 */
export function copyMethodMetadata(from: object, to: object): void {
  for (const key of Reflect.getMetadataKeys(from)) {
    Reflect.defineMetadata(key, Reflect.getMetadata(key, from), to);
  }
  for (const prop of ['name', 'length'] as const) {
    Object.defineProperty(to, prop, { value: (from as Record<string, unknown>)[prop], configurable: true });
  }
}
