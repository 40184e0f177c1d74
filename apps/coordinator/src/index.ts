export const projectName = 'coordinator';
