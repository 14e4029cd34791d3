"""One router per resource: health, meetings (segments, close), ask (and search), events (live captions)."""
