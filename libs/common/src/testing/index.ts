// @spool/common/testing: helpers for specs and test/, never for production code (the lint
// refuses it there, and the container image leaves dist/testing/ out).
export { startFreezingRelay, type FreezingRelay } from './freezing-relay';
