export const projectName = 'gateway';
