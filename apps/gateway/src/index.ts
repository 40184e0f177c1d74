export { startGateway, gatewaySettings, gatewayDefaultPorts } from './gateway-service';
