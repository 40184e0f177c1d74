export const projectName = 'cli';
