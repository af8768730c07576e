/** The MIME type a document is uploaded with, from its file name. The processor checks the bytes themselves. */

const BY_EXTENSION: Record<string, string> = {
  txt: 'text/plain',
  text: 'text/plain',
  md: 'text/markdown',
  markdown: 'text/markdown',
  html: 'text/html',
  htm: 'text/html',
  csv: 'text/csv',
  json: 'application/json',
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  zip: 'application/zip',
};

export function contentTypeFor(fileName: string): string {
  const extension = fileName.slice(fileName.lastIndexOf('.') + 1).toLowerCase();
  return BY_EXTENSION[extension] ?? 'application/octet-stream';
}

export function isZipFileName(fileName: string): boolean {
  return fileName.toLowerCase().endsWith('.zip');
}
