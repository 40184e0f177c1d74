export const projectName = 'segment-store';
