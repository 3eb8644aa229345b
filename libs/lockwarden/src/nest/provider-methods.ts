import type { DiscoveryService, MetadataScanner } from '@nestjs/core';

type InstanceWrapper = ReturnType<DiscoveryService['getProviders']>[number];

/** One method of an application provider or controller, as the explorers see it. */
export interface ProviderMethod {
  readonly wrapper: InstanceWrapper;
  readonly instance: object;
  readonly name: string;
  readonly fn: unknown;
}

/**
 * Every method of every instantiated provider and controller (the @nestjs/schedule
 * explorer's way of finding decorated methods), for the explorers that read lock metadata.
 */
export function* providerMethods(discovery: DiscoveryService, scanner: MetadataScanner): Generator<ProviderMethod> {
  for (const wrapper of [...discovery.getControllers(), ...discovery.getProviders()]) {
    const instance: unknown = wrapper.instance;
    if (!instance || typeof instance !== 'object' || !Object.getPrototypeOf(instance)) continue;
    for (const name of scanner.getAllMethodNames(Object.getPrototypeOf(instance) as object)) {
      yield { wrapper, instance, name, fn: (instance as Record<string, unknown>)[name] };
    }
  }
}
