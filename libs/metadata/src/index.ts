export const projectName = 'metadata';
