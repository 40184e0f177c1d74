export const projectName = 'storage-node';
