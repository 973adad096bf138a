// tests/tool-fixtures.mjs — tool definitions the tool-call suites share (tools.test.mjs, page.test.mjs).

/** A function tool with a bounded string and an enum: its grammar keeps a random-weight model's call short. */
export const WEATHER = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 16 }, unit: { enum: ['celsius', 'fahrenheit'] } }, required: ['city'] },
  },
};
