export { startController, controllerSettings, controllerDefaultPorts } from './controller-service';
