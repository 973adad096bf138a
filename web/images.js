// web/images.js — images in a chat message (issue 32), for the page and <wick-chat>: the tray of
// chosen images above the message box (a thumbnail each, removable), the images a paste or a drop
// carries, and the message's OpenAI content parts: [{type: 'image_url', image_url: {url}}…,
// {type: 'text', text}], the images first, in the order chosen. Each image is read once into a
// data: URL: the engine reads it from there, and a saved conversation (web/sessions.js) keeps it
// whole, so that reopening it shows and sends the same image. The page imports this module once
// a model with an image encoder (an mmproj) is loaded, so its first download does not carry it.
import { el } from './util.js';

/** A File or Blob as a data: URL. */
export function dataUrlOf(blob) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error || new Error(`cannot read ${blob.name || 'the image'}`));
    reader.readAsDataURL(blob);
  });
}

/** The image files a paste's clipboardData or a drop's dataTransfer carries (none: []). */
export function imageFiles(transfer) {
  if (!transfer) return [];
  const files = [...(transfer.files || [])];
  // a pasted screenshot may come as an item only, without a file in `files`
  if (!files.length) for (const item of transfer.items || []) if (item.kind === 'file') files.push(item.getAsFile());
  return files.filter((f) => f && /^image\//.test(f.type));
}

/** A user message's content: the text alone without images, else content parts, the images first. */
export function userContent(text, urls) {
  if (!urls.length) return text;
  return [...urls.map((url) => ({ type: 'image_url', image_url: { url } })), ...(text ? [{ type: 'text', text }] : [])];
}

/** The text of a message's content (a string, or content parts: their text, the images left out). */
export function contentText(content) {
  if (!Array.isArray(content)) return content ?? '';
  return content.filter((p) => p?.type === 'text').map((p) => p.text).join('');
}

/** The image URLs of a message's content (none for a string). */
export function contentImages(content) {
  return Array.isArray(content) ? content.filter((p) => p?.type === 'image_url' && p.image_url?.url).map((p) => p.image_url.url) : [];
}

/** Only the URLs this module makes (data:image/…) and blob: ones are shown or sent as images. */
export const isImageUrl = (url) => /^(data:image\/|blob:)/.test(String(url));

/**
 * The images chosen for the next message: the thumbnails in `tray` (each with a Remove button),
 * the image `button` that opens `input` (a file input, accept="image/*"), and `disabledTitle`:
 * why the button is off while images cannot be sent. onChange(count) after each change;
 * onError(message) when a file cannot be added.
 */
export class ImageTray {
  constructor({ tray, button, input, onChange = () => {}, onError = () => {} }) {
    Object.assign(this, { tray, button, input, onChange, onError });
    this.images = []; // [{url, name}]
    this.enabled = false;
    this.reason = button.title;
    button.addEventListener('click', () => { if (this.enabled) input.click(); });
    input.addEventListener('change', () => {
      const files = [...input.files];
      input.value = ''; // the same file can be chosen again after its removal
      this.add(files);
    });
    this.render();
  }

  /** Images can be added (and are sent), or not: then the tray empties and the button says why. */
  setEnabled(enabled, reason = this.reason) {
    this.enabled = enabled;
    this.reason = reason;
    this.button.disabled = !enabled;
    this.button.title = enabled ? 'Add an image (or paste or drop one)' : reason;
    if (!enabled) this.clear();
  }

  /** Adds the image files among `files` (resolves to how many were added). */
  async add(files) {
    if (!this.enabled) { if (files.length) this.onError(this.reason); return 0; }
    const images = [...files].filter((f) => f && /^image\//.test(f.type));
    if (images.length < files.length) this.onError('Only image files can be added to a message.');
    let added = 0;
    for (const file of images) {
      try {
        this.images.push({ url: await dataUrlOf(file), name: file.name || 'pasted image' });
        added++;
      } catch (e) {
        this.onError(`${file.name || 'The image'} cannot be read: ${e.message}`);
      }
    }
    if (added) this.render();
    return added;
  }

  remove(index) {
    this.images.splice(index, 1);
    this.render();
    this.button.focus();
  }

  clear() {
    if (!this.images.length) return;
    this.images = [];
    this.render();
  }

  /** The URLs of the chosen images, and the tray emptied (they go with the message being sent). */
  take() {
    const urls = this.images.map((i) => i.url);
    this.clear();
    return urls;
  }

  /** Puts images back (a message refused before any answer keeps its images for the next try). */
  restore(urls) {
    if (!urls.length || !this.enabled) return;
    this.images.unshift(...urls.map((url, i) => ({ url, name: `image ${i + 1}` })));
    this.render();
  }

  render() {
    this.tray.replaceChildren(...this.images.map((image, i) => el('figure', { className: 'image-thumb' },
      el('img', { src: image.url, alt: `Image ${i + 1}: ${image.name}` }),
      el('button', { type: 'button', className: 'image-remove', 'aria-label': `Remove image ${i + 1} (${image.name})`, title: 'Remove',
        onclick: () => this.remove(i) }, '×'))));
    this.tray.hidden = !this.images.length;
    this.tray.dataset.count = String(this.images.length);
    this.onChange(this.images.length);
  }
}
