//! Where each field of a YAML file is: a map from a path such as `params[2].type` to the
//! 1-based line and column of its key (or, for list items, of the item). serde_yaml only
//! locates its own parse errors; semantic errors found later need this index.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

#[derive(Debug, Default)]
pub struct Locations {
    spots: HashMap<String, (usize, usize)>,
}

impl Locations {
    pub fn index(source: &str) -> Self {
        let mut collector = Collector::default();
        let mut parser = Parser::new_from_str(source);
        // A syntax error is reported by serde_yaml with its own location; the index just
        // stays partial.
        let _ = parser.load(&mut collector, false);
        let mut locations = Locations::default();
        let mut cursor = 0;
        // Skip StreamStart / DocumentStart.
        while cursor < collector.events.len()
            && matches!(
                collector.events[cursor].0,
                Event::StreamStart | Event::DocumentStart
            )
        {
            cursor += 1;
        }
        locations.walk(&collector.events, &mut cursor, String::new());
        locations
    }

    /// The location of exactly `path`, if the file has it.
    pub fn get(&self, path: &str) -> Option<(usize, usize)> {
        self.spots.get(path).copied()
    }

    /// The location of `path`, or of its nearest located ancestor.
    pub fn find(&self, path: &str) -> (usize, usize) {
        let mut path = path.to_string();
        loop {
            if let Some(spot) = self.spots.get(&path) {
                return *spot;
            }
            match path.rfind(['.', '[']) {
                Some(cut) => path.truncate(cut),
                None => return self.spots.get("").copied().unwrap_or((1, 1)),
            }
        }
    }

    fn walk(&mut self, events: &[(Event, Marker)], cursor: &mut usize, path: String) {
        let Some((event, mark)) = events.get(*cursor) else {
            return;
        };
        self.spots
            .entry(path.clone())
            .or_insert((mark.line(), mark.col() + 1));
        *cursor += 1;
        match event {
            Event::SequenceStart(..) => {
                let mut index = 0;
                while *cursor < events.len() && !matches!(events[*cursor].0, Event::SequenceEnd) {
                    self.walk(events, cursor, format!("{path}[{index}]"));
                    index += 1;
                }
                *cursor += 1;
            }
            Event::MappingStart(..) => {
                while *cursor < events.len() && !matches!(events[*cursor].0, Event::MappingEnd) {
                    let (key_event, key_mark) = &events[*cursor];
                    let key = match key_event {
                        Event::Scalar(text, ..) => text.clone(),
                        _ => String::from("?"),
                    };
                    let child = if path.is_empty() {
                        key
                    } else {
                        format!("{path}.{key}")
                    };
                    self.spots
                        .insert(child.clone(), (key_mark.line(), key_mark.col() + 1));
                    *cursor += 1;
                    self.walk(events, cursor, child);
                }
                *cursor += 1;
            }
            _ => {}
        }
    }
}

#[derive(Default)]
struct Collector {
    events: Vec<(Event, Marker)>,
}

impl MarkedEventReceiver for Collector {
    fn on_event(&mut self, event: Event, mark: Marker) {
        self.events.push((event, mark));
    }
}
