/** Generate with citations: the offline extractive answer, and a model's `[n]` markers read back as citations. */
import {
  EXTRACTIVE_MAX_CHARACTERS,
  EXTRACTIVE_MAX_SENTENCES,
  GENERATE_SYSTEM_PROMPT,
  generateWithCitations,
  NOT_FOUND_ANSWER,
  splitSentences,
  terms,
} from '#core/retrieval/generate';
import type { ModelProvider, ModelRequest } from '#ports/model';
import type { IndexHit } from '#ports/processing';
import { NO_METADATA } from '../../../helpers/chunks';

function hit(documentId: string, text: string, score = 0.5, position = 0): IndexHit {
  return {
    chunk: {
      agentId: 'agent-1',
      environment: 'production',
      knowledgeBaseId: 'kb-1',
      documentId,
      chunkId: `${documentId}#${position}#0000000000000000`,
      s3Key: `agent-1/production/kb-1/${documentId}/${documentId}.txt`,
      position,
      text,
      ...NO_METADATA,
    },
    score,
  };
}

const results: IndexHit[] = [
  hit(
    'shipping',
    'Orders ship from our warehouse in Lyon. Standard delivery takes three to five business days. ' +
      'Express delivery is available in France only.',
    0.9,
  ),
  hit(
    'returns',
    '## Returns\nCustomers can request a refund within 30 days of purchase. Refunds are paid to the original card. ' +
      'Gift cards are never refunded.',
    0.8,
  ),
  hit('company', 'The company was founded in 2009 by two engineers. Its headquarters are in Lyon.', 0.4),
];

/** Which result holds this exact sentence. */
function holder(sentence: string): number {
  return results.findIndex((r) => r.chunk.text.includes(sentence));
}

describe('extractive answer (no model)', () => {
  it('quotes the sentences that answer the question and cites the result each one comes from', async () => {
    const { answer, citations } = await generateWithCitations(
      null,
      'How many days do I have to get a refund?',
      results,
    );

    expect(citations.map((c) => c.sentence)).toContain('Customers can request a refund within 30 days of purchase.');
    expect(citations.map((c) => c.sentence)).not.toContain('The company was founded in 2009 by two engineers.');
    for (const citation of citations) {
      const sentence = citation.sentence as string;
      expect(answer).toContain(`${sentence} [${citation.resultIndex + 1}]`);
      expect(citation.resultIndex).toBe(holder(sentence));
      const { documentId, s3Key, chunkId } = results[citation.resultIndex].chunk;
      expect(citation).toMatchObject({ documentId, s3Key, chunkId });
    }
  });

  it('keeps the quoted sentences in result order, not score order', async () => {
    const { citations } = await generateWithCitations(null, 'delivery days refund', results);

    expect(citations.length).toBeGreaterThan(1);
    const order = citations.map((c) => [c.resultIndex, results[c.resultIndex].chunk.text.indexOf(c.sentence ?? '')]);
    expect(order).toEqual([...order].sort((a, b) => a[0] - b[0] || a[1] - b[1]));
  });

  it('adds a sentence only when it covers a part of the question the chosen ones do not', async () => {
    const single = await generateWithCitations(null, 'How many days do I have to get a refund?', results);
    expect(single.citations.map((c) => c.sentence)).toEqual([
      'Customers can request a refund within 30 days of purchase.',
    ]);

    const { citations } = await generateWithCitations(null, 'refund delivery Lyon', results);
    expect(citations.map((c) => [c.resultIndex, c.sentence])).toEqual([
      [0, 'Orders ship from our warehouse in Lyon.'],
      [0, 'Standard delivery takes three to five business days.'],
      [1, 'Customers can request a refund within 30 days of purchase.'],
    ]);
  });

  it('breaks a tie between equal sentences in favour of the better-ranked result', async () => {
    // Each sentence is long enough that only one fits the character budget.
    const filler = 'at the north gate, next to the blue building, '.repeat(7);
    const a = `Parking is free for visitors ${filler}on weekends.`;
    const b = `Visitors park free ${filler}on Sundays.`;
    const first = await generateWithCitations(null, 'is parking free', [hit('a', a), hit('b', b)]);
    const swapped = await generateWithCitations(null, 'is parking free', [hit('b', b), hit('a', a)]);

    expect(first.citations).toEqual([expect.objectContaining({ resultIndex: 0, documentId: 'a', sentence: a })]);
    expect(swapped.citations).toEqual([expect.objectContaining({ resultIndex: 0, documentId: 'b', sentence: b })]);
  });

  it('matches words across plural and verb endings and accents', async () => {
    expect(terms('Refunds refunded refunding refund')).toEqual(['refund', 'refund', 'refund', 'refund']);
    expect(terms('policies policy')).toEqual(['policy', 'policy']);
    expect(terms('Café shipping ships')).toEqual(['caf', 'ship', 'ship']);

    const { citations } = await generateWithCitations(null, 'refunding gift card', results);
    expect(citations.map((c) => c.sentence)).toContain('Gift cards are never refunded.');
    expect(citations.every((c) => c.resultIndex === 1)).toBe(true);
  });

  it('quotes a sentence repeated by overlapping chunks once', async () => {
    const overlapping = [
      hit('doc', 'Backups run every night at two. They are kept for 35 days.', 0.9, 0),
      hit('doc', 'They are kept for 35 days. Restores take about an hour.', 0.8, 1),
    ];
    const { citations } = await generateWithCitations(null, 'how long are backups kept (days)', overlapping);

    expect(citations.filter((c) => c.sentence === 'They are kept for 35 days.')).toHaveLength(1);
    expect(citations.find((c) => c.sentence === 'They are kept for 35 days.')?.resultIndex).toBe(0);
  });

  it(`quotes at most ${EXTRACTIVE_MAX_SENTENCES} sentences and ${EXTRACTIVE_MAX_CHARACTERS} characters`, async () => {
    const many = Array.from({ length: 8 }, (_, i) =>
      hit(
        `d${i}`,
        `The invoice rule number ${i} says invoices are due ${'promptly and in full '.repeat(8)}within a month.`,
      ),
    );
    const { citations } = await generateWithCitations(null, 'when are invoices due', many);

    expect(citations.length).toBeGreaterThan(0);
    expect(citations.length).toBeLessThanOrEqual(EXTRACTIVE_MAX_SENTENCES);
    expect(citations.reduce((n, c) => n + (c.sentence?.length ?? 0), 0)).toBeLessThanOrEqual(EXTRACTIVE_MAX_CHARACTERS);
  });

  it('cuts a single sentence longer than the limit at a word, and still cites it', async () => {
    const long = `Warranty claims ${'need the serial number and the receipt '.repeat(30)}to be accepted.`;
    const { citations } = await generateWithCitations(null, 'warranty claims', [hit('warranty', long)]);

    expect(citations).toHaveLength(1);
    expect(citations[0].sentence?.length).toBeLessThanOrEqual(EXTRACTIVE_MAX_CHARACTERS);
    expect(citations[0].sentence).toMatch(/^Warranty claims need .*…$/);
    expect(long.startsWith((citations[0].sentence as string).slice(0, -1))).toBe(true);
  });

  it('quotes the first sentence of the top result when no sentence shares a word with the query', async () => {
    const { citations } = await generateWithCitations(null, 'zebra xylophone', results);

    expect(citations).toEqual([
      expect.objectContaining({ resultIndex: 0, sentence: 'Orders ship from our warehouse in Lyon.' }),
    ]);
  });

  it('gives the same answer every time for the same input', async () => {
    const first = await generateWithCitations(null, 'refund delivery Lyon', results);
    for (let i = 0; i < 5; i++) {
      expect(await generateWithCitations(null, 'refund delivery Lyon', results)).toEqual(first);
    }
    expect(
      await generateWithCitations(
        null,
        'refund delivery Lyon',
        results.map((r) => ({ ...r })),
      ),
    ).toEqual(first);
  });

  it('says it could not find the answer, with no citations, when there are no results', async () => {
    await expect(generateWithCitations(null, 'anything', [])).resolves.toEqual({
      answer: NOT_FOUND_ANSWER,
      citations: [],
    });
  });

  it('splits sentences at stops before a capital and at line breaks, dropping list and heading markers', () => {
    expect(splitSentences('# Title\n- first item here\nOne e.g. two. Three? 4 left!  Five')).toEqual([
      'Title',
      'first item here',
      'One e.g. two.',
      'Three?',
      '4 left!',
      'Five',
    ]);
  });
});

describe('with a model', () => {
  function fakeModel(answer: string) {
    const requests: ModelRequest[] = [];
    const model: ModelProvider = {
      name: 'fake',
      generate: async (request) => {
        requests.push(request);
        return { text: answer };
      },
    };
    return { model, requests };
  }

  it('sends the numbered results, the question and the instruction to answer from them with [n] citations', async () => {
    const { model, requests } = fakeModel('Within 30 days [2].');
    await generateWithCitations(model, 'How long do I have to ask for a refund?', results);

    expect(requests).toHaveLength(1);
    const [request] = requests;
    expect(request.system).toBe(GENERATE_SYSTEM_PROMPT);
    expect(request.system).toMatch(/only the numbered search results/);
    expect(request.system).toContain('[1]');
    expect(request.temperature).toBe(0);
    expect(request.messages).toHaveLength(1);
    const prompt = request.messages[0].content;
    expect(request.messages[0].role).toBe('user');
    results.forEach((r, i) => {
      expect(prompt).toContain(`[${i + 1}] ${r.chunk.text}`);
    });
    expect(prompt.indexOf('[1]')).toBeLessThan(prompt.indexOf('[2]'));
    expect(prompt).toMatch(/Question: How long do I have to ask for a refund\?$/);
  });

  it('reads a [2] marker as a citation of the second result', async () => {
    const { model } = fakeModel('You have 30 days to ask for a refund [2].');
    const { answer, citations } = await generateWithCitations(model, 'refund?', results);

    expect(answer).toBe('You have 30 days to ask for a refund [2].');
    const { documentId, s3Key, chunkId } = results[1].chunk;
    expect(citations).toEqual([{ resultIndex: 1, documentId, s3Key, chunkId }]);
  });

  it('reads [2][3] and [3, 1] markers, cites each result once in order of mention, and ignores numbers out of range', async () => {
    const { model } = fakeModel('Refunds take 30 days [2][3]. We are in Lyon [3, 1]. Also [5] and [0] and [2].');
    const { citations } = await generateWithCitations(model, 'refund?', results);

    expect(citations.map((c) => c.resultIndex)).toEqual([1, 2, 0]);
    expect(citations.map((c) => c.documentId)).toEqual(['returns', 'company', 'shipping']);
  });

  it('ignores [2][5] where 5 is beyond the results', async () => {
    const { model } = fakeModel('Within 30 days [2][5].');
    const { citations } = await generateWithCitations(model, 'refund?', results);

    expect(citations.map((c) => c.resultIndex)).toEqual([1]);
  });

  it('returns an answer that cites nothing as it is, with no citations', async () => {
    const { model } = fakeModel('  I am not sure, but probably a month.  ');
    await expect(generateWithCitations(model, 'refund?', results)).resolves.toEqual({
      answer: 'I am not sure, but probably a month.',
      citations: [],
    });
  });

  it('does not call the model when there are no results', async () => {
    const { model, requests } = fakeModel('made up [1]');
    await expect(generateWithCitations(model, 'refund?', [])).resolves.toEqual({
      answer: NOT_FOUND_ANSWER,
      citations: [],
    });
    expect(requests).toHaveLength(0);
  });

  it('passes a model failure on to the caller', async () => {
    const model: ModelProvider = {
      name: 'broken',
      generate: async () => {
        throw new Error('model down');
      },
    };
    await expect(generateWithCitations(model, 'refund?', results)).rejects.toThrow('model down');
  });
});
