import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { LockModuleOptions } from './lock-options.interface';

export const {
  ConfigurableModuleClass: LockConfigurableModule,
  MODULE_OPTIONS_TOKEN: LOCK_MODULE_OPTIONS,
  OPTIONS_TYPE: LOCK_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: LOCK_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<LockModuleOptions>({ moduleName: 'Lock' })
  .setClassMethodName('forRoot')
  .setExtras({ isGlobal: false }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
  .build();
