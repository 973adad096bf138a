#!/usr/bin/env python3
# tools/jinja-reference.py — renders chat templates with the real Jinja (Python's jinja2), set up
# as Hugging Face transformers' apply_chat_template sets it up (transformers'
# utils/chat_template_utils.py, _compile_jinja_template): a sandboxed environment with
# trim_blocks and lstrip_blocks, the loopcontrols extension, a tojson filter that is
# json.dumps without ASCII escaping (indent, separators and sort_keys passed through), and the
# globals raise_exception and strftime_now. The reference that tests/template-reference.json
# holds; tools/template-reference.mjs runs this script, wick's tests never need Python.
#
# stdin: a JSON list of {template, context}; stdout: a JSON list of {text} or {error}.
import json
import sys

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class TemplateError(Exception):
    pass


def raise_exception(message):
    raise TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    raise TemplateError('strftime_now: the reference cases fix no clock, so no case may ask for the date')


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters['tojson'] = tojson
    env.globals['raise_exception'] = raise_exception
    env.globals['strftime_now'] = strftime_now
    return env


def main():
    env = environment()
    out = []
    for case in json.load(sys.stdin):
        try:
            out.append({'text': env.from_string(case['template']).render(**case['context'])})
        except (TemplateError, jinja2.TemplateError) as e:
            out.append({'error': f'{type(e).__name__}: {e}'})
    json.dump({'jinja2': jinja2.__version__, 'renders': out}, sys.stdout, ensure_ascii=False)


if __name__ == '__main__':
    main()
