export const projectName = 'common';
