import { Wick } from 'wick';

const status = document.querySelector('#status');
const out = document.querySelector('#out');
const form = document.querySelector('form');

// the model sits in the app's own static folder (public/), beside index.html
const engine = await Wick.load(new URL('stories260K.gguf', document.baseURI), {
  onProgress: ({ progress }) => (status.textContent = `Loading ${Math.round(100 * progress)}%`),
});
status.textContent = `${engine.info.name}, ${engine.multiThreaded ? 'multi-threaded' : 'single-threaded'} build`;
form.querySelector('button').disabled = false;

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  out.textContent = '';
  document.body.dataset.state = 'generating';
  // temperature 0: greedy, the same text every time
  for await (const chunk of engine.generate(form.prompt.value, { maxTokens: 240, temperature: 0 })) {
    if (!chunk.done) out.textContent += chunk.text;
  }
  document.body.dataset.state = 'done';
});
