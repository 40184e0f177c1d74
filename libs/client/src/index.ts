export const projectName = 'client';
