export const projectName = 'controller';
