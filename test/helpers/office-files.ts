/** Real PDF and DOCX files to upload, made with pdf-lib and docx: one page or one paragraph per line. */
import { Document, Packer, Paragraph } from 'docx';
import { PDFDocument, StandardFonts } from 'pdf-lib';

export const DOCX_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

export async function pdfOf(lines: readonly string[]): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (const line of lines) {
    const page = pdf.addPage();
    page.drawText(line, { x: 50, y: 700, size: 12, font });
  }
  return Buffer.from(await pdf.save());
}

export function docxOf(paragraphs: readonly string[]): Promise<Buffer> {
  return Packer.toBuffer(new Document({ sections: [{ children: paragraphs.map((text) => new Paragraph(text)) }] }));
}
