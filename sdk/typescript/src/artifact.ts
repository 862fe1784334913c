// A file a run, a cell or an answer produced, its bytes read on demand.

import { toBytes, type Data } from './data.js';

/** What an Artifact is made of: the API's description and how to fetch its content. */
export interface ArtifactInit {
  name: string;
  mime: string;
  size: number;
  sha256: string;
  withheld?: string;
  content?: Data;
  content_omitted?: boolean;
}

/**
 * Artifact is a file a program left in its working directory (or a chart
 * an answer drew). Its bytes come with the result when they fit the run's
 * artifact budget; otherwise bytes() downloads them.
 */
export class Artifact {
  /** Path relative to the working directory, such as "out/plot.png". */
  readonly name: string;
  /** Its media type, such as "image/png". */
  readonly mime: string;
  /** Its length in bytes. */
  readonly size: number;
  /** Hex SHA-256 of the content (as redacted); "" when withheld or not read. */
  readonly sha256: string;
  /** Why the content is withheld (it holds a secret and is not text); undefined when it is not. */
  readonly withheld: string | undefined;
  private inline: Uint8Array | undefined;

  constructor(
    init: ArtifactInit,
    private readonly fetchBytes: () => Promise<Uint8Array>,
  ) {
    this.name = init.name;
    this.mime = init.mime;
    this.size = init.size;
    this.sha256 = init.sha256;
    this.withheld = init.withheld;
    if (init.content != null && !init.content_omitted) this.inline = toBytes(init.content);
  }

  /** isPNG says whether the artifact is a PNG image, such as a chart matplotlib drew. */
  get isPNG(): boolean {
    return this.mime === 'image/png';
  }

  /** bytes returns the content: from the result when it came with it, else downloaded (and kept). */
  async bytes(): Promise<Uint8Array> {
    this.inline ??= await this.fetchBytes();
    return this.inline;
  }

  /** text returns the content decoded as UTF-8. */
  async text(): Promise<string> {
    return new TextDecoder().decode(await this.bytes());
  }
}
